{{/*
The chart's helpers. The objects are those of sidecars-deploy/ (the kustomize base, its
components and overlays), rendered from values instead of patches; the test command checks that
both render the same objects (README.md).
*/}}

{{/* The namespace of every namespaced object. */}}
{{- define "blockpool.namespace" -}}
{{ .Values.namespace.name }}
{{- end }}

{{/* The driver's name: the CSIDriver, the StorageClasses' provisioner, the kubelet plugin directory. */}}
{{- define "blockpool.driverName" -}}
blockpool.csi.dev
{{- end }}

{{/* Whether the pool is shared by every node ("true") or one per node (""); fails on anything else. */}}
{{- define "blockpool.shared" -}}
{{- if eq .Values.pool.scope "shared" -}}
true
{{- else if ne .Values.pool.scope "node" -}}
{{- fail (printf "pool.scope is %q: set node (a pool on every node) or shared (one pool every node mounts)" .Values.pool.scope) -}}
{{- end -}}
{{- end }}

{{/*
The labels of every object's metadata: the kustomize base's part-of, and Helm's own. Helm's are
never on pod templates or selectors, so an upgrade of the chart alone restarts no pod.
*/}}
{{- define "blockpool.labels" -}}
app.kubernetes.io/part-of: blockpool
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The driver's image reference. */}}
{{- define "blockpool.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* A sidecar's image and pull policy, from its entry under sidecars. */}}
{{- define "blockpool.sidecarImage" -}}
image: {{ .image.repository }}:{{ .image.tag }}
imagePullPolicy: {{ .image.pullPolicy }}
{{- end }}

{{/* A ServiceAccount of this chart as an RBAC subject. */}}
{{- define "blockpool.subject" -}}
- kind: ServiceAccount
  name: {{ .name }}
  namespace: {{ include "blockpool.namespace" .root }}
{{- end }}

{{/*
The values that cannot work together, refused with what to set instead: the features that the
kustomize layout offers on shared pools only.
*/}}
{{- define "blockpool.validate" -}}
{{- $shared := include "blockpool.shared" . -}}
{{- if and (not $shared) .Values.pool.nfs.server -}}
{{- fail "pool.nfs needs pool.scope=shared: an NFS export is a pool every node shares" -}}
{{- end -}}
{{- if and .Values.pool.nfs.server (not .Values.pool.nfs.path) -}}
{{- fail "pool.nfs.server is set but pool.nfs.path is empty: name the export" -}}
{{- end -}}
{{- if and (not $shared) .Values.groupSnapshots.enabled -}}
{{- fail "groupSnapshots.enabled needs pool.scope=shared: on node-local pools no node's csi-snapshotter is sent a group (docs/deploy.md)" -}}
{{- end -}}
{{- if and (not $shared) .Values.snapshotMetadata.enabled -}}
{{- fail "snapshotMetadata.enabled needs pool.scope=shared: the sidecar serves one driver behind one Service, and on node-local pools each node's driver holds only its own snapshots" -}}
{{- end -}}
{{- if and .Values.metrics.podMonitor.enabled (not .Values.metrics.enabled) -}}
{{- fail "metrics.podMonitor.enabled needs metrics.enabled: the PodMonitor scrapes the driver's metrics port" -}}
{{- end -}}
{{- end }}

{{/* The pool's volume in a pod: the node's directory, or an NFS export. */}}
{{- define "blockpool.poolVolume" -}}
- name: pool
  {{- if .Values.pool.nfs.server }}
  nfs:
    server: {{ .Values.pool.nfs.server }}
    path: {{ .Values.pool.nfs.path }}
  {{- else }}
  hostPath:
    path: {{ .Values.pool.hostPath }}
    type: {{ .Values.pool.hostPathType }}
  {{- end }}
{{- end }}

{{/* The prometheus.io annotations of a driver pod that serves metrics. */}}
{{- define "blockpool.scrapeAnnotations" -}}
# For a Prometheus that discovers pods by annotation; with the Prometheus operator,
# metrics.podMonitor adds a PodMonitor instead.
annotations:
  prometheus.io/scrape: "true"
  prometheus.io/port: {{ .Values.metrics.port | quote }}
  prometheus.io/path: /metrics
{{- end }}

{{/* The livenessprobe sidecar on the driver's socket, which the driver's liveness probe asks. */}}
{{- define "blockpool.livenessProbeSidecar" -}}
- name: liveness-probe
  {{- include "blockpool.sidecarImage" .Values.sidecars.livenessProbe | nindent 2 }}
  args:
    - --csi-address=/csi/csi.sock
    - --health-port=9808
    - --probe-timeout=3s
  resources:
    {{- toYaml .Values.sidecars.livenessProbe.resources | nindent 4 }}
  securityContext:
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
  volumeMounts:
    - name: {{ .socketVolume }}
      mountPath: /csi
{{- end }}

