# routes-lib.sh: shared by the route tests (sourced after lib.sh): a test
# CA and server certificates made with openssl, and the local TLS "model
# API" (modelapi.py) on 127.0.0.3.
#
#   make_ca DIR                  DIR/ca.crt, DIR/ca.key
#   make_cert DIR NAME CN SAN    DIR/NAME.crt and .key signed by DIR's CA
#   start_modelapi PORT CERT KEY LOG [--plain]   sets MA_PID

make_ca()
{
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$1/ca.key" -out "$1/ca.crt" -days 2 \
	    -subj "/CN=egressd test CA $$" >/dev/null 2>&1
}

make_cert()
{
	local d=$1 n=$2 cn=$3 san=$4
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$d/$n.key" -out "$d/$n.csr" -subj "/CN=$cn" \
	    >/dev/null 2>&1 || return 1
	printf 'subjectAltName=DNS:%s\nbasicConstraints=CA:FALSE\n' "$san" \
	    >"$d/$n.ext"
	openssl x509 -req -in "$d/$n.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" \
	    -CAcreateserial -out "$d/$n.crt" -days 2 -extfile "$d/$n.ext" \
	    >/dev/null 2>&1
}

_ma_n=0
start_modelapi()
{
	local port=$1 cert=$2 key=$3 lg=$4 i=0
	shift 4
	_ma_n=$((_ma_n + 1))
	"$PY" -S "$INTEG/modelapi.py" --addr "$UP_ADDR" --port "$port" \
	    --cert "$cert" --key "$key" --log "$lg" "$@" \
	    >"$T/ma-$_ma_n.out" 2>"$T/ma-$_ma_n.err" &
	MA_PID=$!
	_track "$MA_PID"
	while ! grep -q READY "$T/ma-$_ma_n.out" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 200 ] || ! kill -0 "$MA_PID" 2>/dev/null; then
			diag "modelapi on $port did not start"
			diag_file "$T/ma-$_ma_n.err" modelapi
			return 1
		fi
		sleep 0.05
	done
}
