#!/usr/bin/env bash
# Sends one command to a QEMU human monitor listening on TCP
# (-monitor tcp:127.0.0.1:PORT,server=on,wait=off) and waits until QEMU has
# carried it out: the monitor runs commands one after another, so the
# answer to an `info status` sent behind it says the first is done.
#   tests/lib/hmp.sh PORT TIMEOUT COMMAND...
set -u
port=$1 limit=$2
shift 2
exec 3<>"/dev/tcp/127.0.0.1/$port" || { echo "hmp.sh: no monitor on port $port" >&2; exit 2; }
printf '%s\ninfo status\n' "$*" >&3
end=$((SECONDS + limit))
while [ $SECONDS -lt $end ]; do
	if IFS= read -r -t 1 line <&3; then
		case "$line" in *"VM status"*) exec 3>&-; exit 0 ;; esac
	fi
done
echo "hmp.sh: '$*' did not finish in $limit s" >&2
exit 124
