source tests/device/deps.sh >/dev/null 2>&1
which perf strace bpftrace ltrace 2>&1 | head; cat /sys/devices/system/cpu/cpuidle/current_driver /sys/devices/system/cpu/cpuidle/current_governor 2>&1
F=/tmp/fgds-pt/tools/fgds
D=$(mktemp -d /var/tmp/mdx.XXXX); mkdir $D/m $D/d $D/n
$F mount --data $D/d $D/m 2>&1 | tail -1
python3 - $D/n $D/m <<'EOF'
import os,sys,time
def run(d, tag, n=30000):
  t0=time.time(); last=t0; out=[]
  for i in range(n):
    fd=os.open(os.path.join(d,'%s%d'%(tag,i)), os.O_CREAT|os.O_EXCL|os.O_WRONLY,0o644); os.close(fd)
    if (i+1)%10000==0:
      now=time.time(); out.append('%.0f'%((now-last)/10000*1e6)); last=now
  return ' '.join(out)
n, m = sys.argv[1:]
os.mkdir(os.path.join(m,'sub'))
print('native root  ', run(n, 'r'))
print('mount subdir ', run(os.path.join(m,'sub'), 's'))
print('mount root   ', run(m, 'r'))
EOF
$F stat $D/m 2>&1 | grep -E "^(lookup|getattr|create|release|getxattr) "
$F umount $D/m; rm -rf $D
