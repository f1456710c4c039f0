source tests/device/deps.sh >/dev/null 2>&1
F=/tmp/fgds-pt/tools/fgds
cat /proc/sys/kernel/sched_autogroup_enabled 2>&1
for how in bg fg bg fg; do
D=$(mktemp -d /var/tmp/mdx.XXXX); mkdir $D/m $D/d
if [ $how = fg ]; then $F mount -f --data $D/d $D/m 2>/dev/null & sleep 1; else $F mount --data $D/d $D/m >/dev/null 2>&1; fi
python3 - $D/m $how <<'EOF'
import os,sys,time
m, how = sys.argv[1:]
d=os.path.join(m,'a'); os.mkdir(d); t0=time.time(); n=40000
for i in range(n):
  os.close(os.open(os.path.join(d,'f%d'%i), os.O_CREAT|os.O_EXCL|os.O_WRONLY|os.O_CLOEXEC,0o644))
print(how, '%.0f us/create' % ((time.time()-t0)/n*1e6))
EOF
$F umount $D/m; wait; rm -rf $D
done
