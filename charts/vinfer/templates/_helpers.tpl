{{/* Names. */}}
{{- define "vinfer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vinfer.fullname" -}}
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

{{- define "vinfer.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vinfer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "vinfer.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "vinfer.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "vinfer.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "vinfer.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "vinfer.secretName" -}}
{{- default (include "vinfer.fullname" .) .Values.auth.existingSecret -}}
{{- end -}}


{{/*
The vinfer configuration: .Values.config with output.http on every interface at the service
port (unless set), the Service's names added to output.allowed_hosts (the API answers only Host
names it knows), and the cluster section when cluster.enabled.
*/}}
{{- define "vinfer.config" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- $out := deepCopy (default dict $cfg.output) -}}
{{- if not $out.http -}}
{{- $_ := set $out "http" (printf "0.0.0.0:%d" (int .Values.service.port)) -}}
{{- end -}}
{{- $full := include "vinfer.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- $names := list $full (printf "%s.%s" $full $ns) (printf "%s.%s.svc" $full $ns) (printf "%s.%s.svc.cluster.local" $full $ns) -}}
{{- $_ := set $out "allowed_hosts" (concat (default list $out.allowed_hosts) $names | uniq) -}}
{{- $_ := set $cfg "output" $out -}}
{{- if .Values.cluster.enabled -}}
{{- $cl := dict "nats" .Values.cluster.natsURL "bucket" .Values.cluster.bucket "on_nats_unavailable" .Values.cluster.onNATSUnavailable -}}
{{- if .Values.cluster.maxStreams -}}
{{- $_ := set $cl "max_streams" (int .Values.cluster.maxStreams) -}}
{{- end -}}
{{- if .Values.gpu.count -}}
{{- $_ := set $cl "weight" (int .Values.gpu.count) -}}
{{- end -}}
{{- $_ := set $cfg "cluster" $cl -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}
