set -u
source bench/device_steps.sh
device_begin hostread 420 nvb ls
device_hello | tee $r/hello.txt
step topo.txt 20 nvidia-smi topo -m
step cpu.txt 10 bash -c "lscpu | head -20; nvidia-smi -q | grep -iE 'Product Name|Link Width|PCIe Generation|Current' | head -20"
step build.txt 240 bash .anchors/build.sh /tmp/anch
for i in 1 2 3; do
  step nvb/latency-r$i.txt 60 /tmp/anch/bin/nvbandwidth -t host_device_latency_sm
  step ls/hostread-r$i.txt 90 python3 -m linkscope bench latency --kind host-read
done
step check.txt 60 python3 -m linkscope check $r/nvb/latency-r1.txt $r/nvb/latency-r2.txt $r/nvb/latency-r3.txt --preset hgx-h200-4
device_end hostread
