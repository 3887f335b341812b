dnl EG_ARG_ENABLE(NAME, HELP, DEFAULT): --enable-NAME / --disable-NAME,
dnl yes|no only; defines ENABLE_NAME and the automake conditional.
AC_DEFUN([EG_ARG_ENABLE], [
  AC_ARG_ENABLE([$1], [AS_HELP_STRING([--disable-$1], [$2])],
    [AS_CASE([$enableval], [yes|no], [],
       [AC_MSG_ERROR([bad value '$enableval' for --enable-$1])])],
    [enable_$1=$3])
  AM_CONDITIONAL(m4_toupper([ENABLE_$1]), [test "x$enable_$1" = xyes])
  AS_IF([test "x$enable_$1" = xyes],
    [AC_DEFINE(m4_toupper([ENABLE_$1]), [1], [build the $1 module])])
])
