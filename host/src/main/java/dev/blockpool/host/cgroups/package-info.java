/**
 * Cgroups: the I/O throttle the kernel keeps per cgroup and device, set in the cgroups of a
 * pod found by its UID below the host's {@code /sys/fs/cgroup}, cgroup v1 (blkio) or v2 (io).
 * Uses {@code mounts} for device numbers only.
 */
package dev.blockpool.host.cgroups;
