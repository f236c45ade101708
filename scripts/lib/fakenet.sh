# shellcheck shell=bash disable=SC2154 # $tmp is the caller's (see below)
# scripts/lib/fakenet.sh: the benchmarks' fake internet, sourced by
# scripts/bench and scripts/bench-run. Two network namespaces this script
# makes: "host" (where the clients and sandboxes run, with a resolv.conf that
# points at the fake DNS) and "world" (fakeupstream on TEST-NET addresses:
# DNS 192.0.2.53, HTTP/HTTPS 192.0.2.10 for bench.test), joined by a veth
# pair. Nothing outside these namespaces and loopback is contacted.
#
# Needs: root, iproute2; $tmp (a directory this script removes) holding the
# fakeupstream binary. fakenet_down undoes everything fakenet_up made and
# tolerates a partial set-up.

fakenet_host=barry-bench-h-$$
fakenet_world=barry-bench-w-$$
fakenet_pid=""

# fakenet_prune: deletes what an earlier run that was killed before its
# EXIT trap left (namespaces named for a pid that is gone, and their
# /etc/netns directories). A live run's are kept.
fakenet_prune() {
	local n pid
	for n in $(ip netns list 2>/dev/null | awk '{print $1}'); do
		[[ $n =~ ^barry-bench-[hw]-([0-9]+)$ ]] || continue
		pid=${BASH_REMATCH[1]}
		[[ $pid == "$$" ]] && continue
		kill -0 "$pid" 2>/dev/null && continue
		ip netns delete "$n" 2>/dev/null || true
		rm -rf "/etc/netns/$n"
	done
}

# fakenet_up BLOB_BYTES: namespaces, veth, upstream; waits until it answers.
fakenet_up() {
	local blob=$1 h=$fakenet_host w=$fakenet_world
	fakenet_prune
	ip netns add "$h"
	ip netns add "$w"
	# ip netns exec bind-mounts /etc/netns/NAME/* over /etc: the host side
	# resolves through the fake DNS (srt's proxy uses the system resolver).
	mkdir -p "/etc/netns/$h"
	echo "nameserver 192.0.2.53" >"/etc/netns/$h/resolv.conf"
	ip -n "$h" link set lo up
	ip -n "$w" link set lo up
	ip link add name vh netns "$h" type veth peer name vw netns "$w"
	ip -n "$h" addr add 198.51.100.1/24 dev vh
	ip -n "$h" link set vh up
	ip -n "$w" addr add 198.51.100.2/24 dev vw
	ip -n "$w" link set vw up
	ip -n "$w" addr add 192.0.2.10/32 dev lo
	ip -n "$w" addr add 192.0.2.53/32 dev lo
	ip -n "$h" route add 192.0.2.0/24 via 198.51.100.2
	ip netns exec "$w" "$tmp/fakeupstream" -quiet -dns 192.0.2.53:53 \
		-http 192.0.2.10:80 -https 192.0.2.10:443 -cert-out "$tmp/upstream.pem" \
		-records bench.test=192.0.2.10,opaque.bench.test=192.0.2.10 -blob "$blob" &
	fakenet_pid=$!
	for _ in $(seq 100); do
		if [[ -s "$tmp/upstream.pem" ]] && ip netns exec "$h" bash -c 'exec 3<>/dev/tcp/192.0.2.10/443' 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	echo "fakenet: upstream did not come up" >&2
	return 1
}

# fakenet_down: stop the upstream, delete the namespaces and /etc/netns entry.
fakenet_down() {
	if [[ -n "$fakenet_pid" ]]; then
		kill "$fakenet_pid" 2>/dev/null || true
		wait "$fakenet_pid" 2>/dev/null || true
		fakenet_pid=""
	fi
	ip netns del "$fakenet_host" 2>/dev/null || true
	ip netns del "$fakenet_world" 2>/dev/null || true
	rm -rf "/etc/netns/$fakenet_host"
}
