{{/*
Names. The full name is the release name when it contains the chart name
(release "keda-gpu-scaler" -> "keda-gpu-scaler"), as in the Go chart.
*/}}
{{- define "kgs.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kgs.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Name of a sub-object: <fullname>-<suffix>, within 63 characters. */}}
{{- define "kgs.subname" -}}
{{- printf "%s-%s" (include "kgs.fullname" .ctx | trunc (int (sub 62 (len .suffix))) | trimSuffix "-") .suffix }}
{{- end }}

{{- define "kgs.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Service KEDA connects to (the scalerAddress host). */}}
{{- define "kgs.kedaServiceName" -}}
{{- include "kgs.fullname" . }}
{{- end }}

{{/* The agents' headless Service, which the aggregators resolve. */}}
{{- define "kgs.agentsServiceName" -}}
{{- include "kgs.subname" (dict "ctx" . "suffix" "agents") }}
{{- end }}

{{/* The port KEDA dials: a headless Service does not translate ports. */}}
{{- define "kgs.kedaPort" -}}
{{- if .Values.service.headless }}{{ .Values.grpc.port }}{{ else }}{{ .Values.service.port }}{{ end }}
{{- end }}

{{- define "kgs.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kgs.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The component on the GPU nodes: agent (cluster) or standalone. */}}
{{- define "kgs.nodeComponent" -}}
{{- if eq .Values.mode "cluster" }}agent{{ else }}standalone{{ end }}
{{- end }}

{{/* The component KEDA talks to: aggregator (cluster) or standalone. */}}
{{- define "kgs.kedaComponent" -}}
{{- if eq .Values.mode "cluster" }}aggregator{{ else }}standalone{{ end }}
{{- end }}

{{- define "kgs.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kgs.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
{{- end }}

{{/* Labels of every object: dict "ctx" $ "component" "agent"|"" */}}
{{- define "kgs.labels" -}}
helm.sh/chart: {{ include "kgs.chart" .ctx }}
{{ include "kgs.selectorLabels" . }}
app.kubernetes.io/version: {{ include "kgs.imageTag" .ctx | trunc 63 | quote }}
app.kubernetes.io/part-of: keda-gpu-scaler
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
{{- end }}

{{- define "kgs.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{- define "kgs.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (include "kgs.imageTag" .) }}
{{- end }}
{{- end }}

{{- define "kgs.tlsEnabled" -}}
{{- if or .Values.tls.secretName .Values.tls.certManager.enabled (include "kgs.kedaMTLS" .) }}true{{ end }}
{{- end }}

{{/* mTLS between KEDA and the scaler with the chart's own CA (tls.kedaClientAuth): "true" or "". */}}
{{- define "kgs.kedaMTLS" -}}
{{- $e := toString .Values.tls.kedaClientAuth.enabled }}
{{- $mine := and (not .Values.tls.secretName) (not .Values.tls.certManager.enabled) (ne .Values.probes.type "grpc") (eq .Release.Namespace .Values.networkPolicy.keda.namespace) }}
{{- if eq $e "true" }}true
{{- else if and (eq $e "auto") $mine (.Capabilities.APIVersions.Has "cert-manager.io/v1") }}true
{{- end }}
{{- end }}

{{- define "kgs.tlsSecretName" -}}
{{- if .Values.tls.secretName }}
{{- .Values.tls.secretName }}
{{- else }}
{{- include "kgs.subname" (dict "ctx" . "suffix" "tls") }}
{{- end }}
{{- end }}

{{- define "kgs.kedaClientSecretName" -}}
{{- include "kgs.subname" (dict "ctx" . "suffix" "keda-client-tls") }}
{{- end }}

{{- define "kgs.tlsMountPath" -}}
/etc/keda-gpu-scaler/tls
{{- end }}

{{/* The aggregator-agent link over mTLS (values.yaml: agentTLS). */}}
{{- define "kgs.agentTLSEnabled" -}}
{{- if and (eq .Values.mode "cluster") .Values.agentTLS.enabled }}true{{ end }}
{{- end }}

{{- define "kgs.agentTLSSecretName" -}}
{{- if .Values.agentTLS.agentSecretName }}
{{- .Values.agentTLS.agentSecretName }}
{{- else }}
{{- include "kgs.subname" (dict "ctx" . "suffix" "agent-tls") }}
{{- end }}
{{- end }}

{{- define "kgs.aggregatorClientTLSSecretName" -}}
{{- if .Values.agentTLS.aggregatorSecretName }}
{{- .Values.agentTLS.aggregatorSecretName }}
{{- else }}
{{- include "kgs.subname" (dict "ctx" . "suffix" "aggregator-client-tls") }}
{{- end }}
{{- end }}

{{- define "kgs.agentTLSMountPath" -}}
/etc/keda-gpu-scaler/agent-tls
{{- end }}

{{/* The name on the agents' shared certificate, which the aggregators check. */}}
{{- define "kgs.agentTLSServerName" -}}
{{ include "kgs.agentsServiceName" . }}.{{ .Release.Namespace }}.svc
{{- end }}

{{/* The agents' flags: serve over TLS, require the aggregators' client certificates. */}}
{{- define "kgs.agentTLSArgs" -}}
{{- if include "kgs.agentTLSEnabled" . }}
- --tls-cert={{ include "kgs.agentTLSMountPath" . }}/tls.crt
- --tls-key={{ include "kgs.agentTLSMountPath" . }}/tls.key
- --tls-client-ca={{ include "kgs.agentTLSMountPath" . }}/ca.crt
{{- end }}
{{- end }}

{{/* The aggregators' flags: dial the agents over TLS with a client certificate. */}}
{{- define "kgs.agentsTLSClientArgs" -}}
{{- if include "kgs.agentTLSEnabled" . }}
- --agents-tls-ca={{ include "kgs.agentTLSMountPath" . }}/ca.crt
- --agents-tls-cert={{ include "kgs.agentTLSMountPath" . }}/tls.crt
- --agents-tls-key={{ include "kgs.agentTLSMountPath" . }}/tls.key
- --agents-tls-server-name={{ include "kgs.agentTLSServerName" . }}
{{- end }}
{{- end }}

{{- define "kgs.agentTLSVolumeMount" -}}
{{- if include "kgs.agentTLSEnabled" . }}
- name: agent-tls
  mountPath: {{ include "kgs.agentTLSMountPath" . }}
  readOnly: true
{{- end }}
{{- end }}

{{/* secret: the Secret's name. 0440 as for the KEDA-facing TLS Secret. */}}
{{- define "kgs.agentTLSVolume" -}}
- name: agent-tls
  secret:
    secretName: {{ .secret }}
    # 0440: keda-gpu-scaler refuses a private key that every user can read.
    defaultMode: 288
{{- end }}

{{/* Refuse values that would deploy something broken, saying why. */}}
{{- define "kgs.validate" -}}
{{- if not (has .Values.mode (list "cluster" "standalone")) }}
{{- fail (printf "mode must be cluster or standalone, not %q" (toString .Values.mode)) }}
{{- end }}
{{- if not (has .Values.gpuBackend (list "auto" "nvml" "amdsmi" "amdgpu-sysfs")) }}
{{- fail (printf "gpuBackend must be auto, nvml, amdsmi or amdgpu-sysfs, not %q" (toString .Values.gpuBackend)) }}
{{- end }}
{{- if not (has .Values.probes.type (list "http" "grpc")) }}
{{- fail (printf "probes.type must be http or grpc, not %q" (toString .Values.probes.type)) }}
{{- end }}
{{- if and (eq .Values.probes.type "grpc") (include "kgs.tlsEnabled" .) }}
{{- fail "probes.type grpc cannot probe a TLS port (the kubelet's gRPC probe is plaintext): use probes.type http" }}
{{- end }}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.enabled) }}
{{- fail "metrics.serviceMonitor.enabled needs metrics.enabled" }}
{{- end }}
{{- if .Values.nvmlHostMounts.enabled }}
{{- fail "nvmlHostMounts is not supported: mounting device nodes needs a privileged container. Use the NVIDIA container runtime (runtimeClassName, NVIDIA_VISIBLE_DEVICES), which this chart configures" }}
{{- end }}
{{- if and .Values.service.headless (ne .Values.service.type "ClusterIP") }}
{{- fail (printf "service.headless needs service.type ClusterIP, not %s; set service.headless=false for another type" .Values.service.type) }}
{{- end }}
{{- if lt (int .Values.aggregator.replicaCount) 1 }}
{{- fail "aggregator.replicaCount must be at least 1" }}
{{- end }}
{{- if not (has .Values.aggregator.podAntiAffinity (list "soft" "hard")) }}
{{- fail (printf "aggregator.podAntiAffinity must be soft or hard, not %q" (toString .Values.aggregator.podAntiAffinity)) }}
{{- end }}
{{- if and .Values.agentTLS.enabled (ne .Values.mode "cluster") }}
{{- fail "agentTLS is for mode cluster (the link between aggregators and agents); in mode standalone use tls" }}
{{- end }}
{{- if include "kgs.agentTLSEnabled" . }}
{{- if and (not .Values.agentTLS.certManager.enabled) (or (not .Values.agentTLS.agentSecretName) (not .Values.agentTLS.aggregatorSecretName)) }}
{{- fail "agentTLS.enabled needs agentTLS.agentSecretName and agentTLS.aggregatorSecretName, or agentTLS.certManager.enabled" }}
{{- end }}
{{- if and .Values.agentTLS.certManager.enabled (not .Values.agentTLS.certManager.issuerRef.name) }}
{{- fail "agentTLS.certManager.issuerRef.name is required when agentTLS.certManager.enabled is true" }}
{{- end }}
{{- if eq .Values.probes.type "grpc" }}
{{- fail "probes.type grpc cannot probe the agents' TLS port with agentTLS.enabled (the kubelet's gRPC probe is plaintext): use probes.type http" }}
{{- end }}
{{- end }}
{{- if and .Values.tls.certManager.enabled (not .Values.tls.certManager.issuerRef.name) }}
{{- required "tls.certManager.issuerRef.name is required when tls.certManager.enabled is true" .Values.tls.certManager.issuerRef.name }}
{{- end }}
{{- $ka := toString .Values.tls.kedaClientAuth.enabled }}
{{- if not (has $ka (list "auto" "true" "false")) }}
{{- fail (printf "tls.kedaClientAuth.enabled must be auto, true or false, not %s" $ka) }}
{{- end }}
{{- if eq $ka "true" }}
{{- if or .Values.tls.secretName .Values.tls.certManager.enabled }}
{{- fail "tls.kedaClientAuth.enabled=true makes the link's own CA and certificates: leave tls.secretName and tls.certManager.enabled unset (or bring your own with tls.secretName and tls.clientAuth)" }}
{{- end }}
{{- if ne .Release.Namespace .Values.networkPolicy.keda.namespace }}
{{- fail (printf "tls.kedaClientAuth.enabled=true needs the release in KEDA's namespace (networkPolicy.keda.namespace: %s), where KEDA reads a ClusterTriggerAuthentication's Secrets: install with -n %s (or set networkPolicy.keda.namespace to KEDA's namespace)" .Values.networkPolicy.keda.namespace .Values.networkPolicy.keda.namespace) }}
{{- end }}
{{- end }}
{{- end }}

{{/* Downward API: the node name labels metrics; pod name and namespace name the pod in logs. */}}
{{- define "kgs.downwardEnv" -}}
- name: NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: spec.nodeName
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- end }}

{{/* Flags every role shares. */}}
{{- define "kgs.commonArgs" -}}
- --port={{ .Values.grpc.port }}
- --metrics-port={{ if .Values.metrics.enabled }}{{ .Values.metrics.port }}{{ else }}0{{ end }}
- --probe-port={{ if .Values.probes.enabled }}{{ .Values.probes.port }}{{ else }}0{{ end }}
- --log-level={{ .Values.logLevel }}
- --log-format={{ .Values.logFormat }}
- --health-check-interval={{ .Values.healthCheckInterval }}
{{- with .Values.listenAddress }}
- --listen-address={{ . }}
{{- end }}
{{- end }}

{{/* TLS flags for the pods KEDA talks to. */}}
{{- define "kgs.tlsArgs" -}}
{{- if include "kgs.tlsEnabled" . }}
- --tls-cert={{ include "kgs.tlsMountPath" . }}/tls.crt
- --tls-key={{ include "kgs.tlsMountPath" . }}/tls.key
{{- if include "kgs.kedaMTLS" . }}
- --tls-client-ca={{ include "kgs.tlsMountPath" . }}/ca.crt
{{- else if .Values.tls.clientAuth }}
- --tls-client-ca={{ include "kgs.tlsMountPath" . }}/{{ .Values.tls.clientCAKey }}
{{- end }}
{{- end }}
{{- end }}

{{- define "kgs.tlsVolumeMount" -}}
{{- if include "kgs.tlsEnabled" . }}
- name: tls
  mountPath: {{ include "kgs.tlsMountPath" . }}
  readOnly: true
{{- end }}
{{- end }}

{{/* No subPath: a Secret volume is updated in place only without one, and the server re-reads the files. */}}
{{- define "kgs.tlsVolume" -}}
{{- if include "kgs.tlsEnabled" . }}
- name: tls
  secret:
    secretName: {{ include "kgs.tlsSecretName" . }}
    # 0440: keda-gpu-scaler refuses a private key that every user can read.
    defaultMode: 288
{{- end }}
{{- end }}

{{- define "kgs.containerPorts" -}}
- name: grpc
  containerPort: {{ .Values.grpc.port }}
  protocol: TCP
{{- if .Values.metrics.enabled }}
- name: metrics
  containerPort: {{ .Values.metrics.port }}
  protocol: TCP
{{- end }}
{{- if .Values.probes.enabled }}
- name: probes
  containerPort: {{ .Values.probes.port }}
  protocol: TCP
{{- end }}
{{- end }}

{{- define "kgs.probes" -}}
{{- if .Values.probes.enabled }}
livenessProbe:
  httpGet:
    path: /healthz
    port: probes
  {{- toYaml .Values.probes.liveness | nindent 2 }}
readinessProbe:
  {{- if eq .Values.probes.type "grpc" }}
  grpc:
    port: {{ .Values.grpc.port }}
  {{- else }}
  httpGet:
    path: /readyz
    port: probes
  {{- end }}
  {{- toYaml .Values.probes.readiness | nindent 2 }}
{{- end }}
{{- end }}

{{/* Service ports (target ports by name). */}}
{{- define "kgs.servicePorts" -}}
- name: grpc
  port: {{ .port }}
  targetPort: grpc
  protocol: TCP
{{- if .ctx.Values.metrics.enabled }}
- name: metrics
  port: {{ .ctx.Values.metrics.port }}
  targetPort: metrics
  protocol: TCP
{{- end }}
{{- end }}

{{/*
Authenticated scrapes (docs/configuration.md, "Authenticated scrapes"): one
--source-auth profile per sourceAuth.profiles entry, its files mounted under
/var/run/secrets/kgs/source-auth/<name>/: a projected service-account token
(rotated by the kubelet; the server re-reads it) and/or a Secret's CA and
client certificate. Volumes are named by index (a profile name may be 63
bytes, a volume name may not be longer).
*/}}
{{- define "kgs.sourceAuthDir" -}}
/var/run/secrets/kgs/source-auth/{{ . }}
{{- end }}

{{- define "kgs.sourceAuthArgs" -}}
{{- $parts := list }}
{{- range $i, $p := .Values.sourceAuth.profiles }}
{{- $name := required (printf "sourceAuth.profiles[%d].name is required" $i) $p.name }}
{{- if not $p.namespaces }}
{{- fail (printf "sourceAuth.profiles[%d] (%s): namespaces is required: the namespaces whose triggers may use it, or [\"*\"]" $i $name) }}
{{- end }}
{{- if and (not $p.serviceAccountToken) (not $p.secretName) }}
{{- fail (printf "sourceAuth.profiles[%d] (%s): give serviceAccountToken and/or secretName" $i $name) }}
{{- end }}
{{- $dir := include "kgs.sourceAuthDir" $name }}
{{- $kv := list }}
{{- if $p.serviceAccountToken }}
{{- $kv = append $kv (printf "token-file=%s/token/token" $dir) }}
{{- end }}
{{- if $p.secretName }}
{{- if $p.caKey }}
{{- $kv = append $kv (printf "ca-file=%s/tls/%s" $dir $p.caKey) }}
{{- end }}
{{- if or $p.certKey $p.keyKey }}
{{- if not (and $p.certKey $p.keyKey) }}
{{- fail (printf "sourceAuth.profiles[%d] (%s): certKey and keyKey go together" $i $name) }}
{{- end }}
{{- $kv = append $kv (printf "cert-file=%s/tls/%s" $dir $p.certKey) }}
{{- $kv = append $kv (printf "key-file=%s/tls/%s" $dir $p.keyKey) }}
{{- end }}
{{- end }}
{{- $kv = append $kv (printf "namespaces=%s" (join "|" $p.namespaces)) }}
{{- if $p.hosts }}
{{- $kv = append $kv (printf "hosts=%s" (join "|" $p.hosts)) }}
{{- end }}
{{- if $p.cidrs }}
{{- $kv = append $kv (printf "cidrs=%s" (join "|" $p.cidrs)) }}
{{- end }}
{{- if $p.ownNamespacePods }}
{{- $kv = append $kv "pods=own-namespace" }}
{{- end }}
{{- if $p.allowHttp }}
{{- $kv = append $kv "http=allow" }}
{{- end }}
{{- if and (or $p.serviceAccountToken $p.certKey) (not (or $p.hosts $p.cidrs $p.ownNamespacePods)) }}
{{- fail (printf "sourceAuth.profiles[%d] (%s): where may its credential go? give hosts, cidrs and/or ownNamespacePods: true" $i $name) }}
{{- end }}
{{- $parts = append $parts (printf "%s:%s" $name (join "," $kv)) }}
{{- end }}
{{- if $parts }}
- --source-auth={{ join ";" $parts }}
{{- end }}
{{- end }}

{{- define "kgs.sourceAuthVolumeMounts" -}}
{{- range $i, $p := .Values.sourceAuth.profiles }}
{{- if $p.serviceAccountToken }}
- name: source-auth-{{ $i }}-token
  mountPath: {{ include "kgs.sourceAuthDir" $p.name }}/token
  readOnly: true
{{- end }}
{{- if $p.secretName }}
- name: source-auth-{{ $i }}-tls
  mountPath: {{ include "kgs.sourceAuthDir" $p.name }}/tls
  readOnly: true
{{- end }}
{{- end }}
{{- end }}

{{- define "kgs.sourceAuthVolumes" -}}
{{- range $i, $p := .Values.sourceAuth.profiles }}
{{- with $p.serviceAccountToken }}
- name: source-auth-{{ $i }}-token
  projected:
    sources:
      - serviceAccountToken:
          path: token
          expirationSeconds: {{ .expirationSeconds | default 3600 }}
          {{- with .audience }}
          audience: {{ . }}
          {{- end }}
{{- end }}
{{- if $p.secretName }}
- name: source-auth-{{ $i }}-tls
  secret:
    secretName: {{ $p.secretName }}
    # 0440: keda-gpu-scaler refuses a private key that every user can read.
    defaultMode: 288
{{- end }}
{{- end }}
{{- end }}
