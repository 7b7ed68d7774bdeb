{{/* The objects' name: fixed, as the manager's lease, ClusterRole and kustomize install use it. */}}
{{- define "bpa.name" -}}bpa-workflow-controller{{- end }}

{{- define "bpa.labels" -}}
app.kubernetes.io/name: {{ include "bpa.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- define "bpa.selectorLabels" -}}
app.kubernetes.io/name: {{ include "bpa.name" . }}
{{- end }}

{{- define "bpa.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/* The site registry's Service name and the address clients in the cluster use. */}}
{{- define "bpa.registryName" -}}{{ include "bpa.name" . }}-registry{{- end }}

{{- define "bpa.registryAddress" -}}
{{- if eq .Values.siteRegistry.mode "external" -}}
{{ .Values.siteRegistry.external.address }}
{{- else -}}
{{ include "bpa.registryName" . }}.{{ .Release.Namespace }}.svc:{{ .Values.siteRegistry.service.port }}
{{- end -}}
{{- end }}

{{/* The Secret holding the registry account: the site's, or the one the chart makes. */}}
{{- define "bpa.registryAuthSecret" -}}
{{ .Values.siteRegistry.auth.secretName | default (printf "%s-auth" (include "bpa.registryName" .)) }}
{{- end }}

{{/* The Secret holding the registry's certificate and CA. */}}
{{- define "bpa.registryTLSSecret" -}}
{{- if eq .Values.siteRegistry.mode "external" -}}
{{ .Values.siteRegistry.external.caSecretName }}
{{- else -}}
{{ .Values.siteRegistry.tls.secretName | default (printf "%s-tls" (include "bpa.registryName" .)) }}
{{- end -}}
{{- end }}
