"""The cases of check-manifests-selftest.sh: each breaks the manifests in one way.

Each case is (file, text to find, replacement, words the failure message must contain):
the first occurrence of the text in the file (relative to sidecars-deploy/) is
replaced; the text "@@APPEND" appends the replacement to the file instead.
"""

CASES = [
    # images
    ("base/controller.yaml", "csi-attacher:v4.12.0", "csi-attacher:latest", "not pinned"),
    ("base/node.yaml", "livenessprobe:v2.19.0", "livenessprobe", "not pinned"),
    ("base/kustomization.yaml", 'newTag: "0.1.0"', 'newTag: "latest"', "not pinned"),
    ("examples/pvc-pod.yaml", "busybox:1.37.0", "busybox", "not pinned"),
    ("base/controller.yaml", "csi-resizer:v2.2.1", "csi-resizer:v2.1.0", "RBAC here is for v2.2.1"),
    ("base/controller.yaml", "sig-storage/csi-resizer:", "sig-storage/csi-resizer-fork:", "controller sidecars missing"),
    # one driver name
    ("base/storageclasses.yaml", "provisioner: blockpool.csi.dev", "provisioner: other.csi.dev", "differs from the CSIDriver name"),
    ("base/volumesnapshotclass.yaml", "driver: blockpool.csi.dev", "driver: other.csi.dev", "VolumeSnapshotClass/blockpool-snapshots: driver"),
    ("base/controller.yaml", "--driver-name=blockpool.csi.dev", "--driver-name=other.csi.dev", "--driver-name"),
    ("base/node.yaml", "--kubelet-registration-path=/var/lib/kubelet/plugins/blockpool.csi.dev/csi.sock",
     "--kubelet-registration-path=/var/lib/kubelet/plugins/other.csi.dev/csi.sock", "--kubelet-registration-path"),
    ("base/node.yaml", "path: /var/lib/kubelet/plugins/blockpool.csi.dev", "path: /var/lib/kubelet/plugins/other", "socket directory"),
    ("base/csidriver.yaml", "name: blockpool.csi.dev", "name: other.csi.dev", "differs from the CSIDriver name"),
    # the socket
    ("base/controller.yaml", "- --csi-address=/csi/csi.sock", "- --csi-address=/csi/other.sock", "is not the socket the driver listens on"),
    ("base/controller.yaml", "value: unix:///csi/csi.sock", "value: unix:///tmp/csi.sock", "is not the socket the driver listens on"),
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
    ("base/controller.yaml", "- --mode=controller", "- --mode=node", "must run as a DaemonSet"),
    # liveness
    ("base/controller.yaml", "port: healthz", "port: 9808", "named port"),
    ("base/node.yaml", "- --health-port=9808", "- --health-port=9899", "is not where the livenessprobe sidecar listens"),
    # metrics and logs
    ("base/controller.yaml", "- --http-endpoint=:8090", "- --http-endpoint=:9090", "must serve on its container port named 'metrics'"),
    ("base/node.yaml", "prometheus.io/port: \"8090\"", "prometheus.io/port: \"9808\"", "prometheus.io/scrape, port and path annotations"),
    ("base/node.yaml", "value: text", "value: yaml", "--log-format 'yaml'"),
    ("overlays/prometheus-operator/podmonitor.yaml", "values: [blockpool-controller, blockpool-node]", "values: [blockpool-controller]",
     "[overlays/prometheus-operator] PodMonitor/blockpool: selects ['blockpool-controller'] of the driver's pods"),
    ("overlays/prometheus-operator/podmonitor.yaml", "- port: http-resize", "- port: http-resizer", "scrapes ports no selected pod has: ['http-resizer']"),
    # resources
    ("base/node.yaml", "              memory: 64Mi\n", "\n", "resources missing"),
    ("base/controller.yaml", "            requests:\n              cpu: 10m\n              memory: 128Mi\n", "            requests:\n              memory: 128Mi\n", "resources missing"),
    # CSIDriver
    ("base/csidriver.yaml", "attachRequired: true", "attachRequired: false", "attachRequired"),
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
    ("base/controller.yaml", "- --leader-election=true\n            - --timeout=120s\n            - --extra-create-metadata\n            # No --feature-gates",
     "- --leader-election=false\n            - --timeout=120s\n            - --extra-create-metadata\n            # No --feature-gates", "csi-snapshotter: --leader-election=true"),
    # group snapshots: off in the base, on with their rules in overlays/group-snapshots
    ("base/controller.yaml", "            - --http-endpoint=:8082\n",
     "            - --http-endpoint=:8082\n            - --feature-gates=CSIVolumeGroupSnapshot=true\n",
     "[base] Deployment/blockpool-controller: csi-snapshotter must not run with --feature-gates=CSIVolumeGroupSnapshot=true"),
    ("components/group-snapshots/snapshotter-feature-gate.yaml", "value: --feature-gates=CSIVolumeGroupSnapshot=true",
     "value: --feature-gates=CSIVolumeGroupSnapshot=false",
     "[overlays/group-snapshots] Deployment/blockpool-controller: csi-snapshotter needs --feature-gates=CSIVolumeGroupSnapshot=true"),
    ("components/group-snapshots/snapshotter-rbac.yaml", 'resources: ["volumegroupsnapshotcontents"]\n    verbs: ["get", "list", "watch", "update", "patch"]',
     'resources: ["volumegroupsnapshotcontents"]\n    verbs: ["get", "list", "watch"]',
     "[overlays/group-snapshots] Deployment/blockpool-controller csi-snapshotter group snapshots: RBAC (cluster) lacks ['patch', 'update'] on volumegroupsnapshotcontents"),
    ("base/rbac-controller.yaml", '  # Not granted here: the groupsnapshot.storage.k8s.io rules',
     ('  - apiGroups: ["groupsnapshot.storage.k8s.io"]\n    resources: ["volumegroupsnapshotclasses"]\n'
      '    verbs: ["get", "list", "watch"]\n  # Not granted here: the groupsnapshot.storage.k8s.io rules'),
     "[base] Deployment/blockpool-controller: grants ['get', 'list', 'watch'] on volumegroupsnapshotclasses"),
    # changed block tracking: the sidecar, its RBAC, TLS Secret and Service in overlays/snapshot-metadata only
    ("overlays/snapshot-metadata/kustomization.yaml", "  - ../../components/snapshot-metadata\n", "",
     "[overlays/snapshot-metadata] Deployment/blockpool-controller: expected one csi-snapshot-metadata sidecar"),
    ("overlays/dev/kustomization.yaml", "patches:", "components:\n  - ../../components/snapshot-metadata\npatches:",
     "[overlays/dev] Deployment/blockpool-controller: runs csi-snapshot-metadata"),
    ("components/snapshot-metadata/sidecar.yaml", "csi-snapshot-metadata:v0.2.0", "csi-snapshot-metadata:v0.3.0",
     "RBAC here is for v0.2.0"),
    ("components/snapshot-metadata/rbac.yaml", 'resources: ["tokenreviews"]', 'resources: ["tokenrequests"]',
     "csi-snapshot-metadata: RBAC (cluster) lacks ['create'] on tokenreviews"),
    ("components/snapshot-metadata/sidecar.yaml", "- --tls-key=/etc/snapshot-metadata/tls.key",
     "- --tls-key=/csi/tls.key", "--tls-key must be a file of a Secret volume"),
    ("components/snapshot-metadata/service.yaml", "targetPort: snapshot-meta", "targetPort: 8080",
     "no Service in blockpool-system selects the pod"),
    ("base/rbac-controller.yaml", '  # Not granted here: the groupsnapshot.storage.k8s.io rules',
     ('  - apiGroups: ["authentication.k8s.io"]\n    resources: ["tokenreviews"]\n'
      '    verbs: ["create"]\n  # Not granted here: the groupsnapshot.storage.k8s.io rules'),
     "[base] Deployment/blockpool-controller: grants ['tokenreviews:create'] without the csi-snapshot-metadata"),
    ("examples/volumeattributesclass.yaml", "allocation: preallocated", "fsType: xfs", "cannot change"),
    ("base/controller.yaml", "            - --extra-create-metadata\n", "", "--extra-create-metadata"),
    ("base/controller.yaml", "- --enable-capacity\n", "- --enable-capacity=false\n", "--enable-capacity"),
    ("base/controller.yaml", "--capacity-ownerref-level=2", "--capacity-ownerref-level=1", "--capacity-ownerref-level must be 2"),
    ("base/controller.yaml", "- name: POD_NAME", "- name: MY_POD_NAME", "NAMESPACE and POD_NAME"),
    # RBAC
    ("base/rbac-controller.yaml", 'resources: ["volumeattachments/status"]\n    verbs: ["patch"]', 'resources: ["volumeattachments/status"]\n    verbs: ["get"]',
     "csi-attacher (ServiceAccount blockpool-controller): RBAC (cluster) lacks ['patch'] on volumeattachments/status"),
    ("base/rbac-controller.yaml", 'verbs: ["get", "list", "watch", "create", "patch", "delete"]', 'verbs: ["get", "list", "watch", "patch", "delete"]',
     "lacks ['create'] on persistentvolumes"),
    ("base/rbac-controller.yaml", 'verbs: ["get", "list", "watch", "update"]\n  - apiGroups: ["snapshot.storage.k8s.io"]\n    resources: ["volumesnapshotcontents"]',
     'verbs: ["get", "list"]\n  - apiGroups: ["snapshot.storage.k8s.io"]\n    resources: ["volumesnapshotcontents"]', "lacks ['update', 'watch'] on volumesnapshots"),
    ("base/rbac-controller.yaml", 'resources: ["volumesnapshotcontents/status"]\n    verbs: ["update", "patch"]', 'resources: ["volumesnapshotcontents/status"]\n    verbs: ["update"]',
     "lacks ['patch'] on volumesnapshotcontents/status"),
    ("base/rbac-controller.yaml", 'resources: ["persistentvolumeclaims/status"]', 'resources: ["persistentvolumeclaims"]', "lacks ['patch'] on persistentvolumeclaims/status"),
    ("base/rbac-controller.yaml", 'verbs: ["get", "watch", "list", "delete", "update", "create"]', 'verbs: ["get", "watch", "list"]', "leader election: RBAC"),
    ("base/rbac-controller.yaml", 'resources: ["csistoragecapacities"]', 'resources: ["csistoragecapacity"]', "capacity: RBAC"),
    ("base/rbac-controller.yaml", 'resources: ["replicasets"]', 'resources: ["deployments"]', "owner walk"),
    ("base/rbac-controller.yaml", "  name: blockpool-external-resizer-runner\n---", "  name: blockpool-external-attacher-runner\n---", "csi-resizer (ServiceAccount blockpool-controller)"),
    ("base/rbac-controller.yaml", 'resources: ["csinodes"]\n    verbs: ["get", "list", "watch"]', 'resources: ["*"]\n    verbs: ["get", "list", "watch"]', "wildcard"),
    ("base/rbac-controller.yaml", 'resources: ["storageclasses"]', 'resources: ["storageclasses", "secrets"]', "secrets"),
    ("base/rbac-node.yaml", "@@APPEND",
     ("---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: node-extra\n  namespace: blockpool-system\n"
      "subjects:\n  - kind: ServiceAccount\n    name: blockpool-node\n    namespace: blockpool-system\n"
      "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: blockpool-leader-election\n"),
     "roles it does not need"),
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
