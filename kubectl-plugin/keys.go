package main

// Every name the plugin shares with the cluster: the driver's manifests (sidecars-deploy/base),
// the driver's command line, and the annotations by which a move interrupted at any step is
// found again and finished by the same command.
const (
	driverName = "blockpool.csi.dev"
	// The topology key of a pool on every node: a PersistentVolume's node affinity names its node with it.
	topologyKey = "topology.blockpool.csi.dev/node"

	defaultDriverNamespace = "blockpool-system"
	defaultPodSelector     = "app.kubernetes.io/name=blockpool-node"
	driverContainer        = "blockpool"
	peerPortName           = "peer"
	defaultPoolDir         = "/var/lib/blockpool"
	defaultPeerCADir       = "/etc/blockpool/peer-ca"

	// blockpool-csi move's exit code when the source node still holds the volume (docs/moving.md).
	exitInUseOnSource = 3

	// On the claim: the node its volume is moving to, set before the first copy; a later run
	// finishes that move and refuses another destination until it is done.
	annotationMovingTo = "blockpool.csi.dev/moving-to"
	// On the claim: the node its volume leaves, so that --all-from finds a claim whose
	// PersistentVolume a cut run left deleted and not yet re-created.
	annotationMovingFrom = "blockpool.csi.dev/moving-from"
	// On the claim: set before the last copy, after which the volume may already be the
	// destination's: from then on the move can only be finished, never sent elsewhere.
	annotationFinalStarted = "blockpool.csi.dev/move-final-started"
	// On the claim: the workloads stopped for its move ("statefulset/web,deployment/app"), which
	// the move starts again once the volume is on its new node.
	annotationStopped = "blockpool.csi.dev/move-stopped-workloads"
	// On the claim: the PersistentVolume that replaces the one pinned to the old node, as JSON,
	// saved before that one is deleted, so that a run interrupted between delete and create
	// creates it from here.
	annotationReplacement = "blockpool.csi.dev/move-replacement-pv"
	// The scheduler's choice of node for a claim's provisioning; a moved claim's names the new node.
	annotationSelectedNode = "volume.kubernetes.io/selected-node"
	// On a stopped workload: its replicas before the move, restored when the move is done.
	annotationReplicas = "blockpool.csi.dev/replicas-before-move"
)
