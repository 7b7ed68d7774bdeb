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
