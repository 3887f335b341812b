#!/usr/bin/env python3
"""dockerlint.py: hadolint-style rules for contrib/docker/Dockerfile.

usage: dockerlint.py DOCKERFILE     prints "RULE: line N: message" for every
                                    problem; exit 0 clean, 1 problems, 2 usage

No container engine (and no hadolint) runs on the project's machines, so
these are the rules this recipe must keep, checked by reading it:

  DL3006  every FROM names an image with an explicit tag (or digest)
  DL3007  ... and the tag is not "latest" and names a version (a digit)
  MS01    multi-stage: two FROMs at least, the build stages named (AS x)
  MS02    the final stage copies from an earlier stage (COPY --from=x,
          x a named stage)
  DL3002  the final stage ends with a USER that is not root (0 / root)
  DL3020  no ADD of a URL (and ADD only for local archives: COPY otherwise)
  DL3015  apt-get install with --no-install-recommends
  DL3014  apt-get install with -y
  DL3009  a RUN that runs apt-get update/install also removes
          /var/lib/apt/lists/*
  DL3005  no apt-get upgrade / dist-upgrade
  DL3004  no sudo
  DL3003  no "cd" in RUN (WORKDIR instead)
  DL3025  CMD and ENTRYPOINT in JSON (exec) form
  HC01    the final stage has a HEALTHCHECK that asks /healthz
"""
import json
import re
import sys


def instructions(text):
    """(line number, INSTRUCTION, arguments) with continuations joined and
    comments and blank lines left out."""
    out = []
    cur, start = "", 0
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not cur and (not s or s.startswith("#")):
            continue
        if cur and s.startswith("#"):      # a comment inside a continuation
            continue
        if not cur:
            start = n
        if s.endswith("\\"):
            cur += s[:-1] + " "
            continue
        cur += s
        word, _, rest = cur.partition(" ")
        out.append((start, word.upper(), rest.strip()))
        cur = ""
    if cur:
        word, _, rest = cur.partition(" ")
        out.append((start, word.upper(), rest.strip()))
    return out


def lint(text):
    errs = []

    def err(rule, n, msg):
        errs.append("%s: line %d: %s" % (rule, n, msg))

    ins = instructions(text)
    stages = []          # [name or None, first line, [instructions]]
    for n, word, rest in ins:
        if word == "FROM":
            parts = rest.split()
            parts = [p for p in parts if not p.startswith("--")]
            image = parts[0] if parts else ""
            name = None
            if len(parts) >= 3 and parts[1].upper() == "AS":
                name = parts[2]
            stages.append([name, n, []])
            known = [s[0] for s in stages[:-1]]
            if image in known:
                continue          # FROM an earlier stage
            if "@sha256:" in image:
                continue
            tag = image.rsplit("/", 1)[-1].partition(":")[2]
            if not tag:
                err("DL3006", n, "FROM %s: no explicit tag" % image)
            elif tag == "latest" or not re.search(r"[0-9]", tag):
                err("DL3007", n, "FROM %s: pin a version, not '%s'"
                    % (image, tag))
            continue
        if not stages:
            if word != "ARG":
                err("DL3061", n, "%s before the first FROM" % word)
            continue
        stages[-1][2].append((n, word, rest))
    if not stages:
        err("DL3061", 1, "no FROM")
        return errs

    if len(stages) < 2:
        err("MS01", stages[0][1], "not a multi-stage build (one FROM)")
    for name, n, _ in stages[:-1]:
        if not name:
            err("MS01", n, "a build stage without a name (FROM ... AS name)")
    names = [s[0] for s in stages[:-1] if s[0]]
    final = stages[-1]
    froms = []
    for n, word, rest in final[2]:
        if word == "COPY":
            m = re.search(r"--from=(\S+)", rest)
            if m:
                froms.append(m.group(1))
                if m.group(1) not in names:
                    err("MS02", n, "COPY --from=%s: not a named earlier "
                        "stage" % m.group(1))
    if len(stages) >= 2 and not froms:
        err("MS02", final[1], "the final stage copies nothing from a "
            "build stage (COPY --from=...)")

    users = [(n, rest) for n, word, rest in final[2] if word == "USER"]
    if not users:
        err("DL3002", final[1], "the final stage has no USER: it runs "
            "as root")
    else:
        n, u = users[-1]
        uid = u.split(":")[0].strip()
        if uid in ("root", "0", ""):
            err("DL3002", n, "last USER is root")

    hc = [(n, rest) for n, word, rest in final[2] if word == "HEALTHCHECK"]
    if not hc:
        err("HC01", final[1], "the final stage has no HEALTHCHECK")
    elif "/healthz" not in hc[-1][1] or re.match(r"(?i)NONE\b", hc[-1][1]):
        err("HC01", hc[-1][0], "HEALTHCHECK does not ask /healthz")

    for name, _, body in stages:
        for n, word, rest in body:
            if word == "ADD":
                if re.search(r"\b(https?|ftp)://", rest):
                    err("DL3020", n, "ADD of a URL: fetch in RUN with a "
                        "checksum, or COPY")
                elif not re.search(r"\.(tar|tar\.\w+|tgz|txz)\b", rest):
                    err("DL3020", n, "ADD of a plain file: use COPY")
            if word in ("CMD", "ENTRYPOINT"):
                try:
                    v = json.loads(rest)
                    good = isinstance(v, list) and all(
                        isinstance(x, str) for x in v)
                except ValueError:
                    good = False
                if not good:
                    err("DL3025", n, "%s in shell form: use JSON" % word)
            if word != "RUN":
                continue
            cmds = re.split(r"&&|\|\||;|\|", rest)
            words = [c.split() for c in cmds]
            for w in words:
                if not w:
                    continue
                if w[0] == "sudo":
                    err("DL3004", n, "sudo in RUN")
                if w[0] == "cd":
                    err("DL3003", n, "cd in RUN: use WORKDIR")
                if w[0] in ("apt-get", "apt") and len(w) > 1:
                    verb = [x for x in w[1:] if not x.startswith("-")]
                    verb = verb[0] if verb else ""
                    if verb in ("upgrade", "dist-upgrade"):
                        err("DL3005", n, "apt-get %s" % verb)
                    if verb == "install":
                        if "--no-install-recommends" not in w:
                            err("DL3015", n, "apt-get install without "
                                "--no-install-recommends")
                        if not any(x in ("-y", "--yes", "--assume-yes")
                                   or re.match(r"-[a-z]*y", x)
                                   for x in w):
                            err("DL3014", n, "apt-get install without -y")
            if re.search(r"\bapt-get\s+(\S+\s+)*(update|install)\b", rest) \
                    and not re.search(r"rm\s+-r?f?r?\s+/var/lib/apt/lists/"
                                      r"\*", rest):
                err("DL3009", n, "apt-get without rm -rf "
                    "/var/lib/apt/lists/* in the same RUN")
    return errs


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        errs = lint(f.read())
    for e in errs:
        print(e)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
