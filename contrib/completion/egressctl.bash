# bash completion for egressctl(1)                         -*- shell-script -*-
#
# Installed by `make install` into bash-completion's completionsdir (or
# $(datadir)/bash-completion/completions) as "egressctl".  Phase and
# session names are asked from the running egressd with the -s/-t given
# on the line so far (`egressctl phases`, `egressctl session ls`); when it
# cannot be reached there is simply nothing to offer.

# _egressctl_ask WORDS...: run egressctl with the connection options of
# the command line being completed, stderr discarded.
_egressctl_ask()
{
	local i a opts=()
	for ((i = 1; i < COMP_CWORD; i++)); do
		a=${COMP_WORDS[i]}
		case $a in
		-s | --socket | -t | --token-file)
			((i + 1 < COMP_CWORD)) &&
			    opts+=("$a" "${COMP_WORDS[i + 1]}")
			((i++))
			;;
		esac
	done
	"${COMP_WORDS[0]}" "${opts[@]}" "$@" 2>/dev/null </dev/null
}

# The phase names of `egressctl phases` (text: a header, then "* NAME" or
# "  NAME" lines; allowlist continuation lines start with more spaces).
_egressctl_phases()
{
	_egressctl_ask phases |
	    awk 'NR > 1 && substr($0, 3, 1) != " " {
		print ($1 == "*" ? $2 : $1) }'
}

# The session names: the first tab-separated column of `session ls`.
_egressctl_sessions()
{
	_egressctl_ask session ls | cut -f1
}

_egressctl()
{
	local cur prev words=() i w cmd= sub= nargs=0
	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}

	# an option's value
	case $prev in
	-s | --socket)
		COMPREPLY=($(compgen -f -- "$cur"))
		return 0
		;;
	-t | --token-file)
		COMPREPLY=($(compgen -f -- "$cur"))
		return 0
		;;
	-S | --session)
		COMPREPLY=($(compgen -W "$(_egressctl_sessions)" -- "$cur"))
		return 0
		;;
	--phase)
		COMPREPLY=($(compgen -W "$(_egressctl_phases)" -- "$cur"))
		return 0
		;;
	--listen | --ttl | --since | --limit)
		return 0
		;;
	esac

	# the command words so far (options and their values left out)
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		case $w in
		-s | --socket | -t | --token-file | -S | --session | --phase | \
		    --listen | --ttl | --since | --limit)
			((i++))
			;;
		-*) ;;
		*)
			if [ -z "$cmd" ]; then
				cmd=$w
			elif [ "$cmd" = session ] && [ -z "$sub" ]; then
				sub=$w
			else
				nargs=$((nargs + 1))
			fi
			;;
		esac
	done

	if [[ $cur == -* ]]; then
		local o="-s --socket -S --session -j --json -t --token-file
		    -h --help -V --version"
		case $cmd in
		audit) o="$o --since --limit -f --follow" ;;
		session) [ "$sub" = new ] && o="$o --phase --listen --ttl" ;;
		esac
		COMPREPLY=($(compgen -W "$o" -- "$cur"))
		return 0
	fi

	case $cmd in
	'')
		COMPREPLY=($(compgen -W "status phase phases audit reload session" \
		    -- "$cur"))
		;;
	phase)
		[ "$nargs" -eq 0 ] &&
		    COMPREPLY=($(compgen -W "$(_egressctl_phases)" -- "$cur"))
		;;
	session)
		if [ -z "$sub" ]; then
			COMPREPLY=($(compgen -W "ls new show rm" -- "$cur"))
		elif [ "$nargs" -eq 0 ] &&
		    { [ "$sub" = show ] || [ "$sub" = rm ]; }; then
			COMPREPLY=($(compgen -W "$(_egressctl_sessions)" \
			    -- "$cur"))
		fi
		;;
	esac
	return 0
}
complete -F _egressctl egressctl
