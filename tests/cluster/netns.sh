# shellcheck shell=bash
# The network of a cluster brought up with `safe-cluster up --netns`, sourced by safe-cluster.
#
# Each node's slurmd runs in a network namespace of its own, with one address on a bridge made for
# this cluster; slurmctld, safed and the REST bridge stay on the host side, on the bridge's own
# address. A backup slurmctld (up --backup-ctld) gets a namespace of its own too, "ctl2". Nothing is routed anywhere else: the namespaces have no default route and the host does
# not forward. What `up` made is recorded in DIR/run/net (the subnet, the bridge, the namespaces
# and the host ends of the veth pairs), and `down` removes exactly that, also after a crash.
#
# A namespace is kept by a bind mount of it on DIR/run/netns/<node> (unshare --net=FILE), not by
# `ip netns add`: that needs / to be a mount point, which it is not in a chroot (CI's Debian 13
# root). Commands enter it with nsenter --net=FILE.
# Names: bridge sfb<id>, veth host end sfv<id><node>; <id> is 6 hex digits of the hash of DIR
# (interface names have at most 15 characters).

readonly NET_RECORD_NAME=run/net
# 10.213.K.0/24: one K per cluster; the bridge is .1, the backup slurmctld .2, node nI is .(10+I).
readonly NET_PREFIX=10.213

net_id() { printf '%s' "$DIR" | sha1sum | cut -c1-6; }
net_bridge() { echo "sfb$(net_id)"; }
net_ns() { echo "$DIR/run/netns/$1"; }
net_veth() { echo "sfv$(net_id)$1"; }

# net_subnet: the cluster's 10.213.K (from DIR/run/net).
net_subnet() { sed -n 's/^subnet //p' "$DIR/$NET_RECORD_NAME" 2>/dev/null; }
net_host_addr() { echo "$(net_subnet).1"; }
net_node_addr() { echo "$(net_subnet).$((10 + ${1#n}))"; }
net_backup_ctld_addr() { echo "$(net_subnet).2"; }
net_enabled() { [[ -s $DIR/$NET_RECORD_NAME ]]; }

# net_pick_subnet: a 10.213.K no address on this host uses. Called with the lock held.
net_pick_subnet() {
    local k used
    used=$(ip -o -4 addr show | awk '{ print $4 }')
    for ((k = 1; k < 255; k++)); do
        grep -q "^$NET_PREFIX\.$k\." <<<"$used" || { echo "$NET_PREFIX.$k"; return 0; }
    done
    die "no free $NET_PREFIX.K.0/24 subnet for --netns"
}

# net_up NODES [BACKUP]: makes the bridge and one namespace per node (and with BACKUP=1 one for the
# backup slurmctld), records them. Called with the lock held, before any daemon starts.
net_up() {
    local nodes=$1 backup=${2:-0} subnet bridge i record=$DIR/$NET_RECORD_NAME
    command -v ip >/dev/null || die "--netns needs ip (apt-get install iproute2)"
    subnet=$(net_pick_subnet)
    bridge=$(net_bridge)
    # Names derive from DIR: any such link is a crashed run's of this cluster.
    ip link del "$bridge" 2>/dev/null || true
    for ((i = 1; i <= nodes; i++)); do ip link del "$(net_veth "n$i")" 2>/dev/null || true; done
    ip link del "$(net_veth ctl2)" 2>/dev/null || true
    mkdir -p "$DIR/run/netns"
    echo "subnet $subnet" >"$record"
    ip link add "$bridge" type bridge || die "--netns: cannot create bridge $bridge"
    echo "link $bridge" >>"$record"
    ip addr add "$subnet.1/24" dev "$bridge"
    ip link set "$bridge" up
    for ((i = 1; i <= nodes; i++)); do net_add_ns "n$i" "$subnet.$((10 + i))"; done
    if ((backup)); then net_add_ns ctl2 "$subnet.2"; fi
}

# net_add_ns NAME ADDR: a namespace for NAME with ADDR on the bridge. Called by net_up.
net_add_ns() {
    local ns veth
    ns=$(net_ns "$1")
    veth=$(net_veth "$1")
    touch "$ns"
    unshare "--net=$ns" true || die "--netns: cannot create a network namespace on $ns"
    echo "netns $ns" >>"$DIR/$NET_RECORD_NAME"
    # The pair is made inside the namespace, its other end moved out to ours ($$).
    nsenter "--net=$ns" ip link add eth0 type veth peer name "$veth" netns $$ ||
        die "--netns: cannot create veth $veth"
    echo "link $veth" >>"$DIR/$NET_RECORD_NAME"
    ip link set "$veth" master "$(net_bridge)" up
    nsenter "--net=$ns" ip addr add "$2/24" dev eth0
    nsenter "--net=$ns" ip link set eth0 up
    nsenter "--net=$ns" ip link set lo up
}

# net_down: removes every namespace and link DIR/run/net records. A namespace ends with its mount
# once no process is left in it (down stops them first).
net_down() {
    local record=$DIR/$NET_RECORD_NAME kind name
    [[ -f $record ]] || return 0
    while read -r kind name; do
        case $kind in
        netns) umount "$name" 2>/dev/null || true; rm -f "$name" ;;
        link) ip link del "$name" 2>/dev/null || true ;;
        esac
    done <"$record"
    rm -f "$record"
}

# net_listening NODE PORT: true when something listens on PORT in NODE's namespace.
net_listening() {
    local -a in_ns=()
    if net_enabled; then in_ns=(nsenter "--net=$(net_ns "$1")"); fi
    ${in_ns[@]+"${in_ns[@]}"} ss -ltnH "sport = :$2" 2>/dev/null | grep -q .
}

# net_link NODE up|down: the node's link to the bridge (a partition and its healing).
net_link() {
    net_enabled || die "$CMD needs a cluster brought up with --netns"
    ip link set "$(net_veth "$1")" "$2"
}
