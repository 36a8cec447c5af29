{{/* Names and labels shared by every template. */}}

{{- define "starling.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "starling.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "starling.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "starling.selectorLabels" -}}
app.kubernetes.io/name: {{ include "starling.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "starling.labels" -}}
helm.sh/chart: {{ include "starling.chart" . }}
{{ include "starling.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: starling
{{- end -}}

{{- define "starling.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "starling.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "starling.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/*
Refuses values that would deploy a broken broker. Included by the StatefulSet, so every
`helm install`, `helm upgrade` and `helm template` runs it.
*/}}
{{- define "starling.validateValues" -}}
{{- if not (has .Values.mode (list "embedded" "cluster")) -}}
{{- fail (printf "mode: %q is not embedded or cluster" .Values.mode) -}}
{{- end -}}
{{- if and (eq .Values.mode "embedded") (ne (int .Values.replicaCount) 1) -}}
{{- fail "replicaCount: embedded mode runs exactly 1 replica (each embedded node is a separate broker with its own data); more nodes need mode=cluster" -}}
{{- end -}}
{{- if and (eq .Values.mode "cluster") (not .Values.cluster.preview) -}}
{{- fail "mode: cluster mode is coming soon; this starlingd build refuses STARLING_MODE=cluster at start-up. Set cluster.preview=true only to render and review the manifests" -}}
{{- end -}}
{{- if and (eq .Values.mode "cluster") (not .Values.cluster.postgres.existingSecret) -}}
{{- fail "cluster.postgres.existingSecret: cluster mode needs a Secret with the PostgreSQL password" -}}
{{- end -}}
{{- $drain := add (int (index .Values.config "TBMQ_GRACEFUL_SHUTDOWN_TIMEOUT_SEC" | default "10")) (int (index .Values.config "TCP_NETTY_SHUTDOWN_TIMEOUT" | default "5")) -}}
{{- if le (int .Values.terminationGracePeriodSeconds) (int $drain) -}}
{{- fail (printf "terminationGracePeriodSeconds: %v must exceed TBMQ_GRACEFUL_SHUTDOWN_TIMEOUT_SEC + TCP_NETTY_SHUTDOWN_TIMEOUT (%d s), or the kubelet kills the broker mid-drain" .Values.terminationGracePeriodSeconds $drain) -}}
{{- end -}}
{{- end -}}
