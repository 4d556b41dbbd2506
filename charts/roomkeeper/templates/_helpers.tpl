{{/* The release's name for everything it creates: <release>-roomkeeper, or the release name when it says roomkeeper already. */}}
{{- define "roomkeeper.fullname" -}}
{{- if contains "roomkeeper" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-roomkeeper" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "roomkeeper.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: roomkeeper
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The manager's pods. */}}
{{- define "roomkeeper.selectorLabels" -}}
app.kubernetes.io/name: roomkeeper
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end -}}

{{- define "roomkeeper.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "roomkeeper.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Where map pods reach the join API: joinAPI.url, or this release's Service. */}}
{{- define "roomkeeper.joinAPIURL" -}}
{{- if .Values.joinAPI.url -}}
{{- .Values.joinAPI.url -}}
{{- else if .Values.joinAPI.enabled -}}
{{- printf "http://%s-join-api.%s.svc:%v" (include "roomkeeper.fullname" .) .Release.Namespace .Values.joinAPI.port -}}
{{- end -}}
{{- end -}}
