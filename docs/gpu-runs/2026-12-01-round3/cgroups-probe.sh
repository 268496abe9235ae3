#!/bin/bash
# cgroup facts on the GPU machine (issue 17): what is delegated, can a child cgroup hold a process and stop it
R=/sys/fs/cgroup
echo "== self"; cat /proc/self/cgroup; grep cgroup /proc/mounts
echo "== root controllers: $(cat $R/cgroup.controllers 2>&1) | subtree: $(cat $R/cgroup.subtree_control 2>&1)"
OWN=$R$(grep '^0::' /proc/self/cgroup | cut -d: -f3); OWN=${OWN%/}
echo "OWN=$OWN"; ls $OWN | tr '\n' ' '; echo
for f in cgroup.controllers cgroup.subtree_control cgroup.type memory.max pids.max cpu.weight; do echo "$f: $(cat $OWN/$f 2>&1)"; done
echo "procs in OWN: $(cat $OWN/cgroup.procs | wc -l)"
mkdir -p $OWN/tl-leaf; echo "mkdir leaf rc=$?"
for p in $(cat $OWN/cgroup.procs); do echo $p > $OWN/tl-leaf/cgroup.procs 2>/dev/null; done
echo "left in OWN: $(cat $OWN/cgroup.procs | wc -l); self now: $(cat /proc/self/cgroup)"
echo "+memory +pids" > $OWN/cgroup.subtree_control; echo "enable +memory +pids rc=$? -> $(cat $OWN/cgroup.subtree_control)"
echo "+memory" > $OWN/cgroup.subtree_control; echo "enable +memory rc=$? -> $(cat $OWN/cgroup.subtree_control)"
echo "+pids" > $OWN/cgroup.subtree_control; echo "enable +pids rc=$? -> $(cat $OWN/cgroup.subtree_control)"
mkdir -p $OWN/tl-run; echo "run ctl: $(cat $OWN/tl-run/cgroup.controllers 2>&1)"; ls $OWN/tl-run | tr '\n' ' '; echo
echo 134217728 > $OWN/tl-run/memory.max; echo "memory.max rc=$? $(cat $OWN/tl-run/memory.max 2>&1)"
echo 16 > $OWN/tl-run/pids.max; echo "pids.max rc=$? $(cat $OWN/tl-run/pids.max 2>&1)"
sh -c "echo \$\$ > $OWN/tl-run/cgroup.procs && cat /proc/self/cgroup && exec python3 -c 'b=bytearray(512<<20); print(\"memory hog survived\", len(b))'"; echo "hog rc=$?"
echo "memory.events: $(cat $OWN/tl-run/memory.events 2>&1 | tr '\n' ' ')"
sh -c "echo \$\$ > $OWN/tl-run/cgroup.procs; n=0; for i in \$(seq 40); do sleep 3 & done 2>/dev/null; echo started \$(jobs -p | wc -l); wait" ; echo "fork rc=$?"
echo "pids.events: $(cat $OWN/tl-run/pids.events 2>&1 | tr '\n' ' ') pids.current $(cat $OWN/tl-run/pids.current 2>&1)"
echo "== unshare ipc/net via bwrap"; bwrap --version 2>&1
rmdir $OWN/tl-run 2>&1
