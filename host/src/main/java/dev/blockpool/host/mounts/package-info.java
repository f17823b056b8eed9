/**
 * Mounts: the mount table as /proc/self/mountinfo shows it, mounting and unmounting through the
 * kernel's new mount API (with its system calls beside it), and the paths mounts are made at,
 * seen without following symlinks. Uses no other room of the host.
 */
package dev.blockpool.host.mounts;
