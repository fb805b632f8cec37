{{/* The release's base name: fullnameOverride, else the release name (with the chart name when it is not in it). */}}
{{- define "tiny-module.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The module's --name: module.name, else the release name. */}}
{{- define "tiny-module.moduleName" -}}
{{- .Values.module.name | default .Release.Name -}}
{{- end -}}

{{/* The module's --version: module.version, else the image tag, else the chart's appVersion. */}}
{{- define "tiny-module.moduleVersion" -}}
{{- .Values.module.version | default .Values.image.tag | default .Chart.AppVersion | trimPrefix "v" -}}
{{- end -}}

{{/* The module's name as the runtime sanitises it (Go's GetNameSanitised): its TinyModule's name, and its Lease's as `<name>-lock`. */}}
{{- define "tiny-module.sanitisedName" -}}
{{- regexReplaceAll "[^a-z0-9]+" (include "tiny-module.moduleName" . | lower) "-" | trunc -48 | trimAll "-" -}}
{{- end -}}

{{/* RBAC rules with `$(MODULE)` in resourceNames replaced by the module's sanitised name, `$(NAMESPACE)` by the release namespace. */}}
{{- define "tiny-module.rules" -}}
{{- toYaml .rules | replace "$(MODULE)" (include "tiny-module.sanitisedName" .root) | replace "$(NAMESPACE)" .root.Release.Namespace -}}
{{- end -}}

{{/* The module's name as a label value (a name may be an image repository: `ghcr.io/x/y`). */}}
{{- define "tiny-module.nameLabel" -}}
{{- regexReplaceAll "[^a-z0-9]+" (include "tiny-module.moduleName" . | lower) "-" | trimAll "-" | trunc 63 | trimAll "-" -}}
{{- end -}}

{{- define "tiny-module.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tiny-module.nameLabel" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tiny-module.labels" -}}
{{ include "tiny-module.selectorLabels" . }}
app.kubernetes.io/version: {{ include "tiny-module.moduleVersion" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "tiny-module.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "tiny-module.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/* Cluster-scoped objects are named after the namespace too: two releases of one name in two namespaces must not collide. */}}
{{- define "tiny-module.clusterName" -}}
{{- printf "%s-%s" .Release.Namespace (include "tiny-module.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The gRPC address the module advertises in its TinyModule: this chart's Service. */}}
{{- define "tiny-module.grpcAddress" -}}
{{- printf "%s.%s.svc.%s:%v" (include "tiny-module.fullname" .) .Release.Namespace .Values.clusterDomain .Values.grpc.port -}}
{{- end -}}

{{- define "tiny-module.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* A NATS URL with any user info removed, the credentials going in variables of their own; the scheme is kept (`tls://` must stay TLS), `nats://` when none is written. The context is the URL. */}}
{{- define "tiny-module.natsUrlBare" -}}
{{- printf "%s%s" (regexFind "^[a-z]+://" . | default "nats://") (regexReplaceAll "^([a-z]+://)?([^@/]*@)?" . "") -}}
{{- end -}}
