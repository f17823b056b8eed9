/**
 * The node's host, as the node service sees it: {@link dev.blockpool.host.NodeHost} and the
 * volume operations it gathers (staging, publishing, growth, stats, health and I/O limits), built
 * on the rooms below it. Imports run one way: this facade uses {@code cgroups}, {@code filesystems},
 * {@code loops} and {@code mounts}; {@code cgroups} uses {@code mounts}; {@code filesystems} uses {@code loops} and {@code mounts}; {@code loops} uses
 * {@code mounts}; no room uses this facade.
 */
package dev.blockpool.host;
