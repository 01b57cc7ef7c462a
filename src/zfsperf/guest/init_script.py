"""/init of the OpenZFS guest (busybox sh): modules, the vdev disk, network, dropbear, then wait.

The host passes the lab's public key on the kernel command line (zfsperf.key=<base64>), so one
cached initramfs serves every lab with its own key. "@@READY" on the serial console means ssh can
be tried; "@@ERROR …" means the guest cannot serve and powers off.
"""

INIT = r"""#!/bin/sh
export PATH=/sbin:/usr/sbin:/bin:/usr/bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /tmp /run /var/tmp; mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp; mount -t tmpfs tmpfs /run
for m in virtio_pci virtio_blk virtio_net crc32c_generic ext4 loop; do modprobe $m || echo "@@WARN modprobe $m failed"; done
modprobe zfs || { echo "@@ERROR modprobe zfs failed"; dmesg | tail -20; poweroff -f; }
KEY=""
for a in $(cat /proc/cmdline); do case $a in zfsperf.key=*) KEY=${a#zfsperf.key=};; esac; done
mkdir -p /root/.ssh && chmod 700 /root/.ssh
echo "$KEY" | base64 -d > /root/.ssh/authorized_keys; chmod 600 /root/.ssh/authorized_keys
i=0; while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
# vdev files live on this disk: without it they would fill the guest's RAM, so it is an error
mount -t ext4 /dev/vda /var/tmp || { echo "@@ERROR the vdev disk /dev/vda did not mount (ext4): $(dmesg | grep -i ext4 | tail -2 | tr '\n' ' ')"; poweroff -f; }
# no udevd: libzfs waits for udev's DEVLINKS after labelling whole disks; give it entries
mkdir -p /run/udev/data
for s in /sys/block/vd*; do
  d=${s##*/}; mm=$(cat $s/dev); maj=${mm%:*}; min=${mm#*:}
  printf 'S:%s\nI:1\n' $d > /run/udev/data/b$maj:$min
  printf 'S:%s1\nI:1\n' $d > /run/udev/data/b$maj:$((min+1))
done
hostname zfsperf-openzfs
ip link set lo up; ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0; ip route add default via 10.0.2.2
mkdir -p /etc/dropbear
dropbear -R -E -s -p 22 -P /run/dropbear.pid || { echo "@@ERROR dropbear did not start"; poweroff -f; }
echo "@@READY zfs $(cat /sys/module/zfs/version) kernel $(uname -r)"
while :; do sleep 3600; done
"""
