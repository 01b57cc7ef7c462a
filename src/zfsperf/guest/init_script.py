"""/init of the OpenZFS guest (busybox sh): modules, the vdev disk, network, dropbear, then wait.

The host passes the lab's public key on the kernel command line (zfsperf.key=<base64>), so one
cached initramfs serves every lab with its own key. "@@READY" on the serial console means ssh can
be tried; "@@ERROR …" means the guest cannot serve and powers off.

The host's root directory arrives read-only over 9p (mount tag "hostroot"). /init lays a tmpfs over
it with overlayfs at /hostroot, binds the guest's own /proc, /sys, /dev and vdev disk (/var/tmp)
into it, and puts OpenZFS's userland (this initramfs's /sbin and its libraries) under
/opt/zfsperf-openzfs: `chroot /hostroot` is then the host's own Python and zfsperf checkout on a
machine with kernel OpenZFS, which is how `zfsperf guest run` runs zfsperf there as a local process.
The host's directory zfsperf.exchange=<path> (mount tag "exchange", writable) is mounted at the same
path inside it: results written there are on the host.
"""

INIT = r"""#!/bin/sh
export PATH=/sbin:/usr/sbin:/bin:/usr/bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /tmp /run /var/tmp; mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp; mount -t tmpfs tmpfs /run
for m in virtio_pci virtio_blk virtio_net crc32c_generic ext4 loop 9pnet_virtio 9p overlay; do modprobe $m || echo "@@WARN modprobe $m failed"; done
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
HOSTROOT=0
EXCHANGE=""
for a in $(cat /proc/cmdline); do case $a in zfsperf.exchange=*) EXCHANGE=${a#zfsperf.exchange=};; esac; done
if grep -qs hostroot /sys/bus/virtio/drivers/9pnet_virtio/*/mount_tag; then
  mkdir -p /mnt/host /mnt/upper /hostroot
  mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=512000 hostroot /mnt/host \
    && mount -t tmpfs -o mode=755 tmpfs /mnt/upper && mkdir -p /mnt/upper/u /mnt/upper/w \
    && mount -t overlay overlay -o lowerdir=/mnt/host,upperdir=/mnt/upper/u,workdir=/mnt/upper/w /hostroot \
    && HOSTROOT=1 || echo "@@WARN the host's root (9p hostroot) did not mount: $(dmesg | tail -3 | tr '\n' ' ')"
fi
if [ $HOSTROOT = 1 ]; then
  R=/hostroot
  mount -t proc proc $R/proc; mount --rbind /sys $R/sys; mount --rbind /dev $R/dev
  mount -t tmpfs tmpfs $R/run
  mount --bind /var/tmp $R/var/tmp
  O=$R/opt/zfsperf-openzfs
  mkdir -p $O/sbin $O/lib $O/bin $R/etc/zfs
  mount --bind /sbin $O/sbin; mount --bind /lib/x86_64-linux-gnu $O/lib
  for t in zpool zfs zdb zstream; do
    [ -x /sbin/$t ] && printf '#!/bin/sh\nLD_LIBRARY_PATH=/opt/zfsperf-openzfs/lib exec /opt/zfsperf-openzfs/sbin/%s "$@"\n' $t > $O/bin/$t
    chmod 755 $O/bin/$t
  done
  cp /sbin/zfsperf-in-guest $O/bin/zfsperf-in-guest; chmod 755 $O/bin/zfsperf-in-guest
  if [ -n "$EXCHANGE" ]; then
    mkdir -p "$R$EXCHANGE"
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 exchange "$R$EXCHANGE" \
      || echo "@@WARN the exchange share did not mount at $EXCHANGE"
  fi
  echo "@@HOSTROOT $R"
fi
hostname zfsperf-openzfs
ip link set lo up; ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0; ip route add default via 10.0.2.2
mkdir -p /etc/dropbear
dropbear -R -E -s -p 22 -P /run/dropbear.pid || { echo "@@ERROR dropbear did not start"; poweroff -f; }
echo "@@READY zfs $(cat /sys/module/zfs/version) kernel $(uname -r)"
while :; do sleep 3600; done
"""


# the guest's own kernel modules where zfsperf in the chroot looks for them (/hostroot/lib/modules/
# KERNEL), so that `modprobe zfs` there loads the guest's own build back after a build A/B or a
# load-scope reload: the host's /lib/modules is of another kernel. Bound once a boot, by the host as
# soon as the guest answers (guest/vm.py) and again, if missing, before each `guest run`
# (inguest.py): the image does not do it, so a cached image needs no rebuild. The mount point is
# the directory's real path (on a merged-/usr host /hostroot/lib is a link to usr/lib), the name
# /proc/mounts gives it: a bind is never stacked on an earlier one.
BIND_OWN_MODULES = ('[ ! -d /hostroot/lib ] || { k=$(uname -r); mkdir -p "/hostroot/lib/modules/$k" '
                    '&& d=$(cd "/hostroot/lib/modules/$k" && pwd -P) '
                    '&& { grep -qs " $d " /proc/mounts || mount --bind "/lib/modules/$k" "$d"; }; }')

# `zfsperf guest run` runs zfsperf as: chroot /hostroot /opt/zfsperf-openzfs/bin/zfsperf-in-guest
# PIDFILE CWD PROGRAM ARGS... -- a clean environment, OpenZFS's userland first on PATH, zfsperf's
# state (tunables journal, history) and corpus cache on the guest's vdev disk so they outlive a
# killed zfsperf, and its pid in PIDFILE for the host to pass a signal on.
IN_GUEST = r"""#!/bin/sh
pidfile=$1; cwd=$2; shift 2
mkdir -p "$(dirname "$pidfile")" /var/tmp/zfsperf-state /var/tmp/zfsperf-cache
echo $$ > "$pidfile"
cd "$cwd" || { echo "zfsperf guest run: $cwd is not in the guest's view of the host" >&2; exit 2; }
exec env -i PATH=/opt/zfsperf-openzfs/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root LANG=C.UTF-8 TERM=dumb PYTHONDONTWRITEBYTECODE=1 COLUMNS="${COLUMNS:-120}" \
  ZFSPERF_STATE=/var/tmp/zfsperf-state ZFSPERF_CACHE=/var/tmp/zfsperf-cache "$@"
"""
