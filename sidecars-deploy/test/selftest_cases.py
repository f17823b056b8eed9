"""The cases of check-manifests-selftest.sh: each breaks the manifests in one way.

Each case is (file, text to find, replacement, words the failure message must contain):
the first occurrence of the text in the file (relative to sidecars-deploy/) is
replaced; the text "@@APPEND" appends the replacement to the file instead.
"""

CASES = [
    # images
    ("components/shared-pool/controller.yaml", "csi-attacher:v4.12.0", "csi-attacher:latest", "not pinned"),
    ("base/node.yaml", "livenessprobe:v2.19.0", "livenessprobe", "not pinned"),
    ("base/kustomization.yaml", 'newTag: "0.1.0"', 'newTag: "latest"', "not pinned"),
    ("examples/pvc-pod.yaml", "busybox:1.37.0", "busybox", "not pinned"),
    ("components/shared-pool/controller.yaml", "csi-resizer:v2.2.1", "csi-resizer:v2.1.0", "RBAC here is for v2.2.1"),
    ("components/shared-pool/controller.yaml", "sig-storage/csi-resizer:", "sig-storage/csi-resizer-fork:", "controller sidecars missing"),
    # one driver name
    ("base/storageclasses.yaml", "provisioner: blockpool.csi.dev", "provisioner: other.csi.dev", "differs from the CSIDriver name"),
    ("base/volumesnapshotclass.yaml", "driver: blockpool.csi.dev", "driver: other.csi.dev", "VolumeSnapshotClass/blockpool-snapshots: driver"),
    ("components/shared-pool/controller.yaml", "--driver-name=blockpool.csi.dev", "--driver-name=other.csi.dev", "--driver-name"),
    ("base/node.yaml", "--kubelet-registration-path=/var/lib/kubelet/plugins/blockpool.csi.dev/csi.sock",
     "--kubelet-registration-path=/var/lib/kubelet/plugins/other.csi.dev/csi.sock", "--kubelet-registration-path"),
    ("base/node.yaml", "path: /var/lib/kubelet/plugins/blockpool.csi.dev", "path: /var/lib/kubelet/plugins/other", "socket directory"),
    ("base/csidriver.yaml", "name: blockpool.csi.dev", "name: other.csi.dev", "differs from the CSIDriver name"),
    # the socket
    ("components/shared-pool/controller.yaml", "- --csi-address=/csi/csi.sock", "- --csi-address=/csi/other.sock", "is not the socket the driver listens on"),
    ("components/shared-pool/controller.yaml", "value: unix:///csi/csi.sock", "value: unix:///tmp/csi.sock", "is not the socket the driver listens on"),
    ("base/node.yaml", "- --csi-address=/csi/csi.sock", "- --csi-address=/registration/csi.sock", "is not the socket the driver listens on"),
    ("base/node.yaml", "- --endpoint=$(CSI_ENDPOINT)", "- --endpoint=$(NO_SUCH_VAR)", "not set to a resolvable value"),
    # node plugin
    ("base/node.yaml", "privileged: true", "privileged: false", "must be privileged"),
    ("base/node.yaml", "mountPropagation: Bidirectional", "mountPropagation: HostToContainer", "Bidirectional"),
    ("base/node.yaml", "mountPath: /dev\n", "mountPath: /host-dev\n", "loop devices"),
    ("base/node.yaml", "fieldPath: spec.nodeName", "fieldPath: metadata.name", "spec.nodeName"),
    ("base/node.yaml", "path: /var/lib/kubelet/plugins_registry", "path: /var/lib/kubelet/registry", "plugins_registry"),
    ("base/node.yaml", "automountServiceAccountToken: false", "automountServiceAccountToken: true", "service account token"),
    ("base/node.yaml", "--pool-dir=/var/lib/blockpool", "--pool-dir=/srv/pool", "--pool-dir /srv/pool"),
    ("base/namespace.yaml", "pod-security.kubernetes.io/enforce: privileged", "pod-security.kubernetes.io/enforce: baseline", "Pod Security"),
    ("components/shared-pool/controller.yaml", "- --mode=controller", "- --mode=node", "must run as a DaemonSet"),
    # liveness
    ("components/shared-pool/controller.yaml", "port: healthz", "port: 9808", "named port"),
    ("base/node.yaml", "- --health-port=9808", "- --health-port=9899", "is not where the livenessprobe sidecar listens"),
    # resources
    ("base/node.yaml", "              memory: 64Mi\n", "\n", "resources missing"),
    ("components/shared-pool/controller.yaml", "            requests:\n              cpu: 10m\n              memory: 128Mi\n", "            requests:\n              memory: 128Mi\n", "resources missing"),
    # CSIDriver
    ("base/csidriver.yaml", "attachRequired: false", "attachRequired: true", "attachRequired must be false"),
    ("components/shared-pool/attach-required.yaml", "attachRequired: true", "attachRequired: false",
     "[overlays/nfs-pool] CSIDriver: attachRequired must be true"),
    ("base/csidriver.yaml", "podInfoOnMount: true", "podInfoOnMount: false", "podInfoOnMount"),
    ("base/csidriver.yaml", "fsGroupPolicy: File", "fsGroupPolicy: None", "fsGroupPolicy"),
    ("base/csidriver.yaml", "storageCapacity: true", "storageCapacity: false", "storageCapacity"),
    ("base/csidriver.yaml", "    - Ephemeral\n", "", "volumeLifecycleModes"),
    # StorageClasses and snapshots
    ("base/storageclasses.yaml", "allowVolumeExpansion: true", "allowVolumeExpansion: false", "allowVolumeExpansion"),
    ("base/storageclasses.yaml", "volumeBindingMode: WaitForFirstConsumer", "volumeBindingMode: Immediate", "WaitForFirstConsumer"),
    ("base/storageclasses.yaml", "csi.storage.k8s.io/fstype: xfs", "csi.storage.k8s.io/fstype: btrfs", "is not one of"),
    ("base/storageclasses.yaml", "allocation: sparse", "allocation: thick", "allocation 'thick'"),
    ("base/storageclasses.yaml", "allocation: sparse", "allocation: sparse\n  compression: lz4", "not accepted by the driver"),
    ("base/storageclasses.yaml", 'storageclass.kubernetes.io/is-default-class: "true"', 'storageclass.kubernetes.io/is-default-class: "false"', "default StorageClass"),
    ("base/kustomization.yaml", "  - volumesnapshotclass.yaml\n", "", "no VolumeSnapshotClass"),
    # controller sidecar flags
    ("components/shared-pool/controller.yaml", "- --leader-election=true\n            - --timeout=120s\n            - --extra-create-metadata\n            # No --feature-gates",
     "- --leader-election=false\n            - --timeout=120s\n            - --extra-create-metadata\n            # No --feature-gates", "csi-snapshotter: --leader-election=true"),
    # group snapshots: off in the base, on with their rules in overlays/group-snapshots
    ("components/shared-pool/controller.yaml", "            - --http-endpoint=:8082\n",
     "            - --http-endpoint=:8082\n            - --feature-gates=CSIVolumeGroupSnapshot=true\n",
     "[overlays/nfs-pool] Deployment/blockpool-controller: csi-snapshotter must not run with --feature-gates=CSIVolumeGroupSnapshot=true"),
    ("components/group-snapshots/snapshotter-feature-gate.yaml", "value: --feature-gates=CSIVolumeGroupSnapshot=true",
     "value: --feature-gates=CSIVolumeGroupSnapshot=false",
     "[overlays/group-snapshots] Deployment/blockpool-controller: csi-snapshotter needs --feature-gates=CSIVolumeGroupSnapshot=true"),
    ("components/group-snapshots/snapshotter-rbac.yaml", 'resources: ["volumegroupsnapshotcontents"]\n    verbs: ["get", "list", "watch", "update", "patch"]',
     'resources: ["volumegroupsnapshotcontents"]\n    verbs: ["get", "list", "watch"]',
     "[overlays/group-snapshots] Deployment/blockpool-controller csi-snapshotter group snapshots: RBAC (cluster) lacks ['patch', 'update'] on volumegroupsnapshotcontents"),
    ("base/rbac-sidecars.yaml", '  # Not granted here: the groupsnapshot.storage.k8s.io rules',
     ('  - apiGroups: ["groupsnapshot.storage.k8s.io"]\n    resources: ["volumegroupsnapshotclasses"]\n'
      '    verbs: ["get", "list", "watch"]\n  # Not granted here: the groupsnapshot.storage.k8s.io rules'),
     "[base] DaemonSet/blockpool-node: grants ['get', 'list', 'watch'] on volumegroupsnapshotclasses"),
    ("examples/volumeattributesclass.yaml", "allocation: preallocated", "fsType: xfs", "cannot change"),
    ("components/shared-pool/controller.yaml", "            - --extra-create-metadata\n", "", "--extra-create-metadata"),
    ("components/shared-pool/controller.yaml", "- --enable-capacity\n", "- --enable-capacity=false\n", "--enable-capacity"),
    ("components/shared-pool/controller.yaml", "--capacity-ownerref-level=2", "--capacity-ownerref-level=1", "--capacity-ownerref-level must be 2"),
    ("components/shared-pool/controller.yaml", "- name: POD_NAME", "- name: MY_POD_NAME", "NAMESPACE and POD_NAME"),
    # RBAC
    ("components/shared-pool/rbac-controller.yaml", 'resources: ["volumeattachments/status"]\n    verbs: ["patch"]', 'resources: ["volumeattachments/status"]\n    verbs: ["get"]',
     "csi-attacher (ServiceAccount blockpool-controller): RBAC (cluster) lacks ['patch'] on volumeattachments/status"),
    ("base/rbac-sidecars.yaml", 'verbs: ["get", "list", "watch", "create", "patch", "delete"]', 'verbs: ["get", "list", "watch", "patch", "delete"]',
     "lacks ['create'] on persistentvolumes"),
    ("base/rbac-sidecars.yaml", 'verbs: ["get", "list", "watch", "update"]\n  - apiGroups: ["snapshot.storage.k8s.io"]\n    resources: ["volumesnapshotcontents"]',
     'verbs: ["get", "list"]\n  - apiGroups: ["snapshot.storage.k8s.io"]\n    resources: ["volumesnapshotcontents"]', "lacks ['update', 'watch'] on volumesnapshots"),
    ("base/rbac-sidecars.yaml", 'resources: ["volumesnapshotcontents/status"]\n    verbs: ["update", "patch"]', 'resources: ["volumesnapshotcontents/status"]\n    verbs: ["update"]',
     "lacks ['patch'] on volumesnapshotcontents/status"),
    ("base/rbac-sidecars.yaml", 'resources: ["persistentvolumeclaims/status"]', 'resources: ["persistentvolumeclaims"]', "lacks ['patch'] on persistentvolumeclaims/status"),
    ("base/rbac-sidecars.yaml", 'verbs: ["get", "watch", "list", "delete", "update", "create"]', 'verbs: ["get", "watch", "list"]', "leader election: RBAC"),
    ("base/rbac-sidecars.yaml", 'resources: ["csistoragecapacities"]', 'resources: ["csistoragecapacity"]', "capacity: RBAC"),
    ("components/shared-pool/rbac-controller.yaml", 'resources: ["replicasets"]', 'resources: ["deployments"]', "owner walk"),
    ("components/shared-pool/rbac-controller.yaml", "  name: blockpool-external-resizer-runner\n---", "  name: blockpool-external-attacher-runner\n---", "csi-resizer (ServiceAccount blockpool-controller)"),
    ("components/shared-pool/rbac-controller.yaml", 'resources: ["csinodes"]\n    verbs: ["get", "list", "watch"]', 'resources: ["*"]\n    verbs: ["get", "list", "watch"]', "wildcard"),
    ("base/rbac-sidecars.yaml", 'resources: ["storageclasses"]', 'resources: ["storageclasses", "secrets"]', "secrets"),
    ("base/rbac-node.yaml", "@@APPEND",
     ("---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: node-extra\n  namespace: blockpool-system\n"
      "subjects:\n  - kind: ServiceAccount\n    name: blockpool-node\n    namespace: blockpool-system\n"
      "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: blockpool-leader-election\n"),
     "roles it does not need"),
    # node-local pools: the sidecars beside each node plugin, their token and exactly their RBAC
    ("base/node.yaml", "            # Only claims whose selected node is NODE_NAME, no leader election.\n            - --node-deployment\n", "",
     "csi-provisioner: needs --node-deployment"),
    ("base/node.yaml", "            - --strict-topology\n", "", "--strict-topology"),
    ("base/node.yaml", "--capacity-ownerref-level=1", "--capacity-ownerref-level=0", "--capacity-ownerref-level must be 1"),
    ("base/node.yaml", "            # One resizer acts for the cluster; it only records new sizes here.\n            - --leader-election=true",
     "            - --leader-election=false", "one resizer acts for the cluster"),
    ("base/node.yaml", "            - name: kube-api-access\n              mountPath: /var/run/secrets/kubernetes.io/serviceaccount\n",
     "            - name: socket-token\n              mountPath: /var/run/secrets/blockpool\n",
     "csi-provisioner: needs the service account token"),
    ("base/node.yaml", "          volumeMounts:\n            # The driver's socket", ("          volumeMounts:\n            - name: kube-api-access\n"
     "              mountPath: /var/run/secrets/kubernetes.io/serviceaccount\n            # The driver's socket"),
     "the privileged driver container must not get an API token"),
    ("base/node.yaml", "            - name: POOL_SCOPE\n              value: node", "            - name: POOL_SCOPE\n              value: shared",
     "--pool-scope=shared --mode=all"),
    ("components/shared-pool/controller.yaml", "            - --pool-scope=shared\n", "", "--pool-scope=shared, not node"),
    ("base/rbac-sidecars.yaml", '  # VolumeAttributesClass is GA in v6 and the provisioner watches it.',
     ('  - apiGroups: [""]\n    resources: ["nodes"]\n    verbs: ["get", "list", "watch"]\n'
     '  # VolumeAttributesClass is GA in v6 and the provisioner watches it.'),
     "[base] DaemonSet/blockpool-node (ServiceAccount blockpool-node): RBAC (cluster) grants more than its sidecars need"),
    ("components/shared-pool/node-plugin-only.yaml", "        - name: csi-resizer\n          $patch: delete\n", "",
     "a shared pool's node plugin runs no API sidecar"),
    # overlays and rendering
    ("base/kustomization.yaml", "  - node.yaml\n", "  - node.yaml\n  - missing.yaml\n", "kubectl kustomize failed"),
    ("overlays/nfs-pool/pool-nfs.yaml", "          nfs:\n            server: nfs.example.internal\n            path: /export/blockpool\n---",
     "          emptyDir: {}\n---", "[overlays/nfs-pool] Deployment/blockpool-controller: --pool-dir"),
    ("overlays/dev/node-dev.yaml", "          env:\n", "          securityContext:\n            privileged: false\n          env:\n", "[overlays/dev] DaemonSet/blockpool-node: the node driver container must be privileged"),
    # examples
    ("examples/pvc-pod.yaml", "storageClassName: blockpool-ext4", "storageClassName: fast", "StorageClass 'fast'"),
    ("examples/snapshot.yaml", "volumeSnapshotClassName: blockpool-snapshots", "volumeSnapshotClassName: other", "VolumeSnapshot/blockpool-demo-snap: class"),
    ("examples/restore.yaml", "name: blockpool-demo-snap", "name: no-such-snap", "dataSource VolumeSnapshot/no-such-snap"),
    ("examples/clone.yaml", "kind: PersistentVolumeClaim\n    name: blockpool-demo", "kind: PersistentVolumeClaim\n    name: nope", "dataSource PersistentVolumeClaim/nope"),
    ("examples/ephemeral-pod.yaml", "driver: blockpool.csi.dev", "driver: other.csi.dev", "inline volume driver"),
    ("examples/ephemeral-pod.yaml", "size: 1Gi", "size: big", "volumeAttributes.size"),
    ("examples/block-pvc-pod.yaml", "volumeMode: Block", "volumeMode: Filesystem", "no example with a raw block volume"),
    ("examples/block-pvc-pod.yaml", "      volumeDevices:\n        - name: data\n", "      volumeDevices:\n        - name: other\n", "must be used through volumeDevices"),
    ("examples/kustomization.yaml", "  - clone.yaml\n", "", "missing ['clone']"),
]
