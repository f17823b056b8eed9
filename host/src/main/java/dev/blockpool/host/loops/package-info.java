/**
 * Loop devices: attaching and detaching them through the loop ioctls, reading them back from
 * sysfs, the one rule for which pool image a device is bound to, and which mounts show a device
 * of a volume. Uses the mounts room.
 */
package dev.blockpool.host.loops;
