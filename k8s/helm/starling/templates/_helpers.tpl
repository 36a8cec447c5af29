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

{{- define "starling.ieSelectorLabels" -}}
app.kubernetes.io/name: {{ include "starling.name" . }}-ie
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
{{- if eq .Values.mode "cluster" -}}
{{- include "starling.validateCluster" . -}}
{{- end -}}
{{- if and .Values.integrationExecutor.enabled (ne .Values.mode "cluster") -}}
{{- fail "integrationExecutor.enabled: starling-ie runs in cluster mode only (an embedded broker runs its integrations itself)" -}}
{{- end -}}
{{- if .Values.tls.enabled -}}
{{- include "starling.validateTls" . -}}
{{- end -}}
{{- $drain := add (int (index .Values.config "TBMQ_GRACEFUL_SHUTDOWN_TIMEOUT_SEC" | default "10")) (int (index .Values.config "TCP_NETTY_SHUTDOWN_TIMEOUT" | default "5")) -}}
{{- if le (int .Values.terminationGracePeriodSeconds) (int $drain) -}}
{{- fail (printf "terminationGracePeriodSeconds: %v must exceed TBMQ_GRACEFUL_SHUTDOWN_TIMEOUT_SEC + TCP_NETTY_SHUTDOWN_TIMEOUT (%d s), or the kubelet kills the broker mid-drain" .Values.terminationGracePeriodSeconds $drain) -}}
{{- end -}}
{{- if .Values.drain.enabled -}}
{{- include "starling.validateDrain" (dict "Values" .Values "shutdown" $drain) -}}
{{- end -}}
{{- end -}}

{{/*
Cluster mode: the external services must be named, the datasource URL must be a form the
loader accepts, and the variables the chart derives from `cluster.*` must not also be set in
`config` (two values for one variable; the ConfigMap would carry a duplicate key).
*/}}
{{- define "starling.validateCluster" -}}
{{- $c := .Values.cluster -}}
{{- if not $c.kafka.servers -}}
{{- fail "cluster.kafka.servers: cluster mode needs the Kafka bootstrap servers (TB_KAFKA_SERVERS), host:port[,host:port...]" -}}
{{- end -}}
{{- if not $c.kafka.prefix -}}
{{- fail "cluster.kafka.prefix: cluster mode needs a topic prefix (TB_KAFKA_PREFIX)" -}}
{{- end -}}
{{- if and $c.redis.sentinel.master $c.redis.cluster.nodes -}}
{{- fail "cluster.redis.sentinel.master and cluster.redis.cluster.nodes: choose Redis Sentinel or Redis Cluster, not both" -}}
{{- end -}}
{{- if $c.redis.cluster.nodes -}}
{{- if not (regexMatch "^\\s*[^,:\\s]+:[0-9]+\\s*(,\\s*[^,:\\s]+:[0-9]+\\s*)*$" (toString $c.redis.cluster.nodes)) -}}
{{- fail (printf "cluster.redis.cluster.nodes: %q is not host:port[,host:port...] (REDIS_NODES)" (toString $c.redis.cluster.nodes)) -}}
{{- end -}}
{{- if (ne (toString (default 0 $c.redis.db)) "0") -}}
{{- fail "cluster.redis.db: must be 0 with Redis Cluster (it has only database 0)" -}}
{{- end -}}
{{- else if $c.redis.sentinel.master -}}
{{- if not (regexMatch "^\\s*[^,:\\s]+:[0-9]+\\s*(,\\s*[^,:\\s]+:[0-9]+\\s*)*$" (toString $c.redis.sentinel.sentinels)) -}}
{{- fail (printf "cluster.redis.sentinel.sentinels: %q is not host:port[,host:port...] (REDIS_SENTINELS); Sentinel needs at least one" (toString $c.redis.sentinel.sentinels)) -}}
{{- end -}}
{{- else if not $c.redis.host -}}
{{- fail "cluster.redis.host: cluster mode needs the Redis/Valkey host (REDIS_HOST)" -}}
{{- end -}}
{{- if not (regexMatch "^(jdbc:postgresql|postgresql|postgres)://[^/]+/[^/?]+" (toString $c.postgres.url)) -}}
{{- fail (printf "cluster.postgres.url: %q is not jdbc:postgresql://host[:port]/database or postgresql://[user[:password]@]host[:port]/database (SPRING_DATASOURCE_URL)" (toString $c.postgres.url)) -}}
{{- end -}}
{{- if not $c.postgres.existingSecret -}}
{{- fail "cluster.postgres.existingSecret: cluster mode needs a Secret with the PostgreSQL password (SPRING_DATASOURCE_PASSWORD), e.g. kubectl create secret generic starling-postgres --from-literal=password=..." -}}
{{- end -}}
{{- range $var, $key := dict "TB_KAFKA_SERVERS" "kafka.servers" "TB_KAFKA_PREFIX" "kafka.prefix" "TB_KAFKA_REPLICATION_FACTOR" "kafka.replicationFactor" "REDIS_HOST" "redis.host" "REDIS_PORT" "redis.port" "REDIS_CONNECTION_TYPE" "redis.sentinel.master" "REDIS_MASTER" "redis.sentinel.master" "REDIS_SENTINELS" "redis.sentinel.sentinels" "REDIS_WAIT_REPLICAS" "redis.sentinel.waitReplicas" "REDIS_NODES" "redis.cluster.nodes" "REDIS_MAX_REDIRECTS" "redis.cluster.maxRedirects" "REDIS_DB" "redis.db" "REDIS_USERNAME" "redis.username" "REDIS_PASSWORD" "redis.existingSecret" "SPRING_DATASOURCE_URL" "postgres.url" "SPRING_DATASOURCE_USERNAME" "postgres.username" "SPRING_DATASOURCE_PASSWORD" "postgres.existingSecret" -}}
{{- if hasKey $.Values.config $var -}}
{{- fail (printf "config.%s: in cluster mode the chart sets %s from cluster.%s; set it there" $var $var $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding the listeners' certificate: the operator's, or cert-manager's. */}}
{{- define "starling.tlsSecretName" -}}
{{- if .Values.tls.certManager.enabled -}}
{{- printf "%s-tls" (include "starling.fullname" .) -}}
{{- else -}}
{{- .Values.tls.existingSecret -}}
{{- end -}}
{{- end -}}

{{/*
TLS: one source for the certificate, at least one listener, a client-auth mode the broker
knows, and no LISTENER_SSL_* / LISTENER_WSS_* in `config` (the chart sets them).
*/}}
{{- define "starling.validateTls" -}}
{{- $t := .Values.tls -}}
{{- if eq (not $t.existingSecret) (not $t.certManager.enabled) -}}
{{- fail "tls: set exactly one of tls.existingSecret (a kubernetes.io/tls Secret) and tls.certManager.enabled" -}}
{{- end -}}
{{- if and $t.certManager.enabled (or (not $t.certManager.issuerRef.name) (not $t.certManager.dnsNames)) -}}
{{- fail "tls.certManager: needs issuerRef.name (an existing Issuer or ClusterIssuer) and at least one of dnsNames" -}}
{{- end -}}
{{- if not (or $t.mqtt $t.websocket) -}}
{{- fail "tls: enabled with neither tls.mqtt nor tls.websocket" -}}
{{- end -}}
{{- if not (has $t.clientAuth (list "none" "requested" "required")) -}}
{{- fail (printf "tls.clientAuth: %q is not none, requested or required" $t.clientAuth) -}}
{{- end -}}
{{- range $var, $_ := .Values.config -}}
{{- if or (hasPrefix "LISTENER_SSL_" $var) (hasPrefix "LISTENER_WSS_" $var) -}}
{{- fail (printf "config.%s: with tls.enabled the chart sets the TLS listeners from tls.*; set it there" $var) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
drain.enabled: the hook needs the admin token, a positive rate and wait, and the grace period
must hold the wait and the shutdown after it; the variables it sets must not also be in
`config`.
*/}}
{{- define "starling.validateDrain" -}}
{{- $d := .Values.drain -}}
{{- if not .Values.admin.existingSecret -}}
{{- fail "drain.enabled: the preStop hook calls POST /api/app/drain with SECURITY_ADMIN_TOKEN; set admin.existingSecret (with the admin.tokenKey entry)" -}}
{{- end -}}
{{- if le (float64 $d.rate) 0.0 -}}
{{- fail (printf "drain.rate: %v must be above 0 (connections per second)" $d.rate) -}}
{{- end -}}
{{- if le (int $d.timeoutSeconds) 0 -}}
{{- fail (printf "drain.timeoutSeconds: %v must be above 0" $d.timeoutSeconds) -}}
{{- end -}}
{{- $need := add (int $d.timeoutSeconds) (int .shutdown) -}}
{{- if le (int .Values.terminationGracePeriodSeconds) (int $need) -}}
{{- fail (printf "terminationGracePeriodSeconds: %v must exceed drain.timeoutSeconds + TBMQ_GRACEFUL_SHUTDOWN_TIMEOUT_SEC + TCP_NETTY_SHUTDOWN_TIMEOUT (%d s): the preStop drain and the shutdown share it" .Values.terminationGracePeriodSeconds $need) -}}
{{- end -}}
{{- range $var := list "STARLING_DRAIN_RATE" "STARLING_DRAIN_SERVER_REFERENCE" -}}
{{- if hasKey $.Values.config $var -}}
{{- fail (printf "config.%s: set by the chart from drain.*; remove it from config" $var) -}}
{{- end -}}
{{- end -}}
{{- end -}}
