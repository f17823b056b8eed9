/**
 * The peer channel: what one node's driver serves the other nodes' drivers on a node-local pool,
 * over mutual TLS with certificates of the cluster's CA (docs/peers.md). The server
 * ({@link dev.blockpool.peer.PeerServer}, {@link dev.blockpool.peer.PeerService}) carries the
 * pool's exports, ModifyVolume and a moved volume's retirement; the client
 * ({@link dev.blockpool.peer.PeerClient}) is the controller's way to the other nodes; the
 * certificates and the CA ({@link dev.blockpool.peer.NodeCertificates},
 * {@link dev.blockpool.peer.PeerCaCommand}), how the other nodes are found
 * ({@link dev.blockpool.peer.PeerDirectory}) and the move command
 * ({@link dev.blockpool.peer.MoveCommand}) sit beside them. The driver starts and stops it all
 * through {@link dev.blockpool.peer.PeerChannel}.
 */
package dev.blockpool.peer;
