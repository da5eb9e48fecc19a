"""Protobuf message descriptors for core/v1 Pod, its spec and everything a pod template holds.

Same notation as minikcp.machinery.protobuf_messages (which parses these tables): one Go field a
line, ``<number> <jsonName>[!] <type>``, from k8s.io/api core/v1 (release 1.33). Kept apart because
Pod, Deployment, Job and CronJob all share it and it is most of the core/v1 surface.
"""

from __future__ import annotations

# Container and EphemeralContainerCommon have the same fields under the same numbers.
_CONTAINER = """
    1 name! string
    2 image string
    3 command []string
    4 args []string
    5 workingDir string
    6 ports []ContainerPort
    19 envFrom []EnvFromSource
    7 env []EnvVar
    8 resources ResourceRequirements
    23 resizePolicy []ContainerResizePolicy
    24 restartPolicy *string
    9 volumeMounts []VolumeMount
    21 volumeDevices []VolumeDevice
    10 livenessProbe *Probe
    11 readinessProbe *Probe
    22 startupProbe *Probe
    12 lifecycle *Lifecycle
    13 terminationMessagePath string
    20 terminationMessagePolicy string
    14 imagePullPolicy string
    15 securityContext *SecurityContext
    16 stdin bool
    17 stdinOnce bool
    18 tty bool
"""

_SPEC: dict[str, str] = {
    "Pod": "1 metadata ObjectMeta; 2 spec PodSpec; 3 status PodStatus",
    "PodTemplateSpec": "1 metadata ObjectMeta; 2 spec PodSpec",
    "PodSpec": """
        1 volumes []Volume
        20 initContainers []Container
        2 containers! []Container
        34 ephemeralContainers []EphemeralContainer
        3 restartPolicy string
        4 terminationGracePeriodSeconds *int64
        5 activeDeadlineSeconds *int64
        6 dnsPolicy string
        7 nodeSelector map[string]string
        8 serviceAccountName string
        9 serviceAccount string
        21 automountServiceAccountToken *bool
        10 nodeName string
        11 hostNetwork bool
        12 hostPID bool
        13 hostIPC bool
        27 shareProcessNamespace *bool
        14 securityContext *PodSecurityContext
        15 imagePullSecrets []LocalObjectReference
        16 hostname string
        17 subdomain string
        18 affinity *Affinity
        19 schedulerName string
        22 tolerations []Toleration
        23 hostAliases []HostAlias
        24 priorityClassName string
        25 priority *int32
        26 dnsConfig *PodDNSConfig
        28 readinessGates []PodReadinessGate
        29 runtimeClassName *string
        30 enableServiceLinks *bool
        31 preemptionPolicy *string
        32 overhead map[string]Quantity
        33 topologySpreadConstraints []TopologySpreadConstraint
        35 setHostnameAsFQDN *bool
        36 os *PodOS
        37 hostUsers *bool
        38 schedulingGates []PodSchedulingGate
        39 resourceClaims []PodResourceClaim
        40 resources *ResourceRequirements
    """,
    "Container": _CONTAINER,
    "EphemeralContainer": "1 ... EphemeralContainerCommon; 2 targetContainerName string",
    "EphemeralContainerCommon": _CONTAINER,
    "ContainerPort": """
        1 name string
        2 hostPort int32
        3 containerPort! int32
        4 protocol string
        5 hostIP string
    """,
    "EnvFromSource": """
        1 prefix string
        2 configMapRef *ConfigMapEnvSource
        3 secretRef *SecretEnvSource
    """,
    "ConfigMapEnvSource": "1 ... LocalObjectReference; 2 optional *bool",
    "SecretEnvSource": "1 ... LocalObjectReference; 2 optional *bool",
    "EnvVar": "1 name! string; 2 value string; 3 valueFrom *EnvVarSource",
    "EnvVarSource": """
        1 fieldRef *ObjectFieldSelector
        2 resourceFieldRef *ResourceFieldSelector
        3 configMapKeyRef *ConfigMapKeySelector
        4 secretKeyRef *SecretKeySelector
    """,
    "ObjectFieldSelector": "1 apiVersion string; 2 fieldPath! string",
    "ResourceFieldSelector": "1 containerName string; 2 resource! string; 3 divisor Quantity",
    "ConfigMapKeySelector": "1 ... LocalObjectReference; 2 key! string; 3 optional *bool",
    "SecretKeySelector": "1 ... LocalObjectReference; 2 key! string; 3 optional *bool",
    "ResourceRequirements": """
        1 limits map[string]Quantity
        2 requests map[string]Quantity
        3 claims []ResourceClaim
    """,
    "ResourceClaim": "1 name! string; 2 request string",
    "ContainerResizePolicy": "1 resourceName! string; 2 restartPolicy! string",
    "VolumeMount": """
        1 name! string
        2 readOnly bool
        7 recursiveReadOnly *string
        3 mountPath! string
        4 subPath string
        5 mountPropagation *string
        6 subPathExpr string
    """,
    "VolumeDevice": "1 name! string; 2 devicePath! string",
    "Probe": """
        1 ... ProbeHandler
        2 initialDelaySeconds int32
        3 timeoutSeconds int32
        4 periodSeconds int32
        5 successThreshold int32
        6 failureThreshold int32
        7 terminationGracePeriodSeconds *int64
    """,
    "ProbeHandler": """
        1 exec *ExecAction
        2 httpGet *HTTPGetAction
        3 tcpSocket *TCPSocketAction
        4 grpc *GRPCAction
    """,
    "ExecAction": "1 command []string",
    "HTTPGetAction": """
        1 path string
        2 port! IntOrString
        3 host string
        4 scheme string
        5 httpHeaders []HTTPHeader
    """,
    "HTTPHeader": "1 name! string; 2 value! string",
    "TCPSocketAction": "1 port! IntOrString; 2 host string",
    "GRPCAction": "1 port! int32; 2 service! *string",
    "Lifecycle": """
        1 postStart *LifecycleHandler
        2 preStop *LifecycleHandler
        3 stopSignal *string
    """,
    "LifecycleHandler": """
        1 exec *ExecAction
        2 httpGet *HTTPGetAction
        3 tcpSocket *TCPSocketAction
        4 sleep *SleepAction
    """,
    "SleepAction": "1 seconds! int64",
    "SecurityContext": """
        1 capabilities *Capabilities
        2 privileged *bool
        3 seLinuxOptions *SELinuxOptions
        10 windowsOptions *WindowsSecurityContextOptions
        4 runAsUser *int64
        8 runAsGroup *int64
        5 runAsNonRoot *bool
        6 readOnlyRootFilesystem *bool
        7 allowPrivilegeEscalation *bool
        9 procMount *string
        11 seccompProfile *SeccompProfile
        12 appArmorProfile *AppArmorProfile
    """,
    "Capabilities": "1 add []string; 2 drop []string",
    "SELinuxOptions": "1 user string; 2 role string; 3 type string; 4 level string",
    "WindowsSecurityContextOptions": """
        1 gmsaCredentialSpecName *string
        2 gmsaCredentialSpec *string
        3 runAsUserName *string
        4 hostProcess *bool
    """,
    "SeccompProfile": "1 type! string; 2 localhostProfile *string",
    "AppArmorProfile": "1 type! string; 2 localhostProfile *string",
    "PodSecurityContext": """
        1 seLinuxOptions *SELinuxOptions
        8 windowsOptions *WindowsSecurityContextOptions
        2 runAsUser *int64
        6 runAsGroup *int64
        3 runAsNonRoot *bool
        4 supplementalGroups []int64
        12 supplementalGroupsPolicy *string
        5 fsGroup *int64
        7 sysctls []Sysctl
        9 fsGroupChangePolicy *string
        10 seccompProfile *SeccompProfile
        11 appArmorProfile *AppArmorProfile
        13 seLinuxChangePolicy *string
    """,
    "Sysctl": "1 name! string; 2 value! string",
    "Affinity": """
        1 nodeAffinity *NodeAffinity
        2 podAffinity *PodAffinity
        3 podAntiAffinity *PodAntiAffinity
    """,
    "NodeAffinity": """
        1 requiredDuringSchedulingIgnoredDuringExecution *NodeSelector
        2 preferredDuringSchedulingIgnoredDuringExecution []PreferredSchedulingTerm
    """,
    "NodeSelector": "1 nodeSelectorTerms! []NodeSelectorTerm",
    "NodeSelectorTerm": """
        1 matchExpressions []NodeSelectorRequirement
        2 matchFields []NodeSelectorRequirement
    """,
    "NodeSelectorRequirement": "1 key! string; 2 operator! string; 3 values []string",
    "PreferredSchedulingTerm": "1 weight! int32; 2 preference! NodeSelectorTerm",
    "PodAffinity": """
        1 requiredDuringSchedulingIgnoredDuringExecution []PodAffinityTerm
        2 preferredDuringSchedulingIgnoredDuringExecution []WeightedPodAffinityTerm
    """,
    "PodAntiAffinity": """
        1 requiredDuringSchedulingIgnoredDuringExecution []PodAffinityTerm
        2 preferredDuringSchedulingIgnoredDuringExecution []WeightedPodAffinityTerm
    """,
    "PodAffinityTerm": """
        1 labelSelector *LabelSelector
        2 namespaces []string
        3 topologyKey! string
        4 namespaceSelector *LabelSelector
        5 matchLabelKeys []string
        6 mismatchLabelKeys []string
    """,
    "WeightedPodAffinityTerm": "1 weight! int32; 2 podAffinityTerm! PodAffinityTerm",
    "Toleration": """
        1 key string
        2 operator string
        3 value string
        4 effect string
        5 tolerationSeconds *int64
    """,
    "HostAlias": "1 ip! string; 2 hostnames []string",
    "PodDNSConfig": """
        1 nameservers []string
        2 searches []string
        3 options []PodDNSConfigOption
    """,
    "PodDNSConfigOption": "1 name string; 2 value *string",
    "PodReadinessGate": "1 conditionType! string",
    "TopologySpreadConstraint": """
        1 maxSkew! int32
        2 topologyKey! string
        3 whenUnsatisfiable! string
        4 labelSelector *LabelSelector
        5 minDomains *int32
        6 nodeAffinityPolicy *string
        7 nodeTaintsPolicy *string
        8 matchLabelKeys []string
    """,
    "PodOS": "1 name! string",
    "PodSchedulingGate": "1 name! string",
    "PodResourceClaim": """
        1 name! string
        3 resourceClaimName *string
        4 resourceClaimTemplateName *string
    """,
}

_VOLUMES: dict[str, str] = {
    "Volume": "1 name! string; 2 ... VolumeSource",
    "VolumeSource": """
        1 hostPath *HostPathVolumeSource
        2 emptyDir *EmptyDirVolumeSource
        3 gcePersistentDisk *GCEPersistentDiskVolumeSource
        4 awsElasticBlockStore *AWSElasticBlockStoreVolumeSource
        5 gitRepo *GitRepoVolumeSource
        6 secret *SecretVolumeSource
        7 nfs *NFSVolumeSource
        8 iscsi *ISCSIVolumeSource
        9 glusterfs *GlusterfsVolumeSource
        10 persistentVolumeClaim *PersistentVolumeClaimVolumeSource
        11 rbd *RBDVolumeSource
        12 flexVolume *FlexVolumeSource
        13 cinder *CinderVolumeSource
        14 cephfs *CephFSVolumeSource
        15 flocker *FlockerVolumeSource
        16 downwardAPI *DownwardAPIVolumeSource
        17 fc *FCVolumeSource
        18 azureFile *AzureFileVolumeSource
        19 configMap *ConfigMapVolumeSource
        20 vsphereVolume *VsphereVirtualDiskVolumeSource
        21 quobyte *QuobyteVolumeSource
        22 azureDisk *AzureDiskVolumeSource
        23 photonPersistentDisk *PhotonPersistentDiskVolumeSource
        26 projected *ProjectedVolumeSource
        24 portworxVolume *PortworxVolumeSource
        25 scaleIO *ScaleIOVolumeSource
        27 storageos *StorageOSVolumeSource
        28 csi *CSIVolumeSource
        29 ephemeral *EphemeralVolumeSource
        30 image *ImageVolumeSource
    """,
    "HostPathVolumeSource": "1 path! string; 2 type *string",
    "EmptyDirVolumeSource": "1 medium string; 2 sizeLimit *Quantity",
    "GCEPersistentDiskVolumeSource": """
        1 pdName! string
        2 fsType string
        3 partition int32
        4 readOnly bool
    """,
    "AWSElasticBlockStoreVolumeSource": """
        1 volumeID! string
        2 fsType string
        3 partition int32
        4 readOnly bool
    """,
    "GitRepoVolumeSource": "1 repository! string; 2 revision string; 3 directory string",
    "SecretVolumeSource": """
        1 secretName string
        2 items []KeyToPath
        3 defaultMode *int32
        4 optional *bool
    """,
    "KeyToPath": "1 key! string; 2 path! string; 3 mode *int32",
    "NFSVolumeSource": "1 server! string; 2 path! string; 3 readOnly bool",
    "ISCSIVolumeSource": """
        1 targetPortal! string
        2 iqn! string
        3 lun! int32
        4 iscsiInterface string
        5 fsType string
        6 readOnly bool
        7 portals []string
        8 chapAuthDiscovery bool
        11 chapAuthSession bool
        10 secretRef *LocalObjectReference
        12 initiatorName *string
    """,
    "GlusterfsVolumeSource": "1 endpoints! string; 2 path! string; 3 readOnly bool",
    "PersistentVolumeClaimVolumeSource": "1 claimName! string; 2 readOnly bool",
    "RBDVolumeSource": """
        1 monitors! []string
        2 image! string
        3 fsType string
        4 pool string
        5 user string
        6 keyring string
        7 secretRef *LocalObjectReference
        8 readOnly bool
    """,
    "FlexVolumeSource": """
        1 driver! string
        2 fsType string
        3 secretRef *LocalObjectReference
        4 readOnly bool
        5 options map[string]string
    """,
    "CinderVolumeSource": """
        1 volumeID! string
        2 fsType string
        3 readOnly bool
        4 secretRef *LocalObjectReference
    """,
    "CephFSVolumeSource": """
        1 monitors! []string
        2 path string
        3 user string
        4 secretFile string
        5 secretRef *LocalObjectReference
        6 readOnly bool
    """,
    "FlockerVolumeSource": "1 datasetName string; 2 datasetUUID string",
    "DownwardAPIVolumeSource": "1 items []DownwardAPIVolumeFile; 2 defaultMode *int32",
    "DownwardAPIVolumeFile": """
        1 path! string
        2 fieldRef *ObjectFieldSelector
        3 resourceFieldRef *ResourceFieldSelector
        4 mode *int32
    """,
    "FCVolumeSource": """
        1 targetWWNs []string
        2 lun *int32
        3 fsType string
        4 readOnly bool
        5 wwids []string
    """,
    "AzureFileVolumeSource": "1 secretName! string; 2 shareName! string; 3 readOnly bool",
    "ConfigMapVolumeSource": """
        1 ... LocalObjectReference
        2 items []KeyToPath
        3 defaultMode *int32
        4 optional *bool
    """,
    "VsphereVirtualDiskVolumeSource": """
        1 volumePath! string
        2 fsType string
        3 storagePolicyName string
        4 storagePolicyID string
    """,
    "QuobyteVolumeSource": """
        1 registry! string
        2 volume! string
        3 readOnly bool
        4 user string
        5 group string
        6 tenant string
    """,
    "AzureDiskVolumeSource": """
        1 diskName! string
        2 diskURI! string
        3 cachingMode *string
        4 fsType *string
        5 readOnly *bool
        6 kind *string
    """,
    "PhotonPersistentDiskVolumeSource": "1 pdID! string; 2 fsType string",
    "ProjectedVolumeSource": "1 sources! []VolumeProjection; 2 defaultMode *int32",
    "VolumeProjection": """
        1 secret *SecretProjection
        2 downwardAPI *DownwardAPIProjection
        3 configMap *ConfigMapProjection
        4 serviceAccountToken *ServiceAccountTokenProjection
        5 clusterTrustBundle *ClusterTrustBundleProjection
    """,
    "SecretProjection": "1 ... LocalObjectReference; 2 items []KeyToPath; 4 optional *bool",
    "DownwardAPIProjection": "1 items []DownwardAPIVolumeFile",
    "ConfigMapProjection": "1 ... LocalObjectReference; 2 items []KeyToPath; 4 optional *bool",
    "ServiceAccountTokenProjection": """
        1 audience string
        2 expirationSeconds *int64
        3 path! string
    """,
    "ClusterTrustBundleProjection": """
        1 name *string
        2 signerName *string
        3 labelSelector *LabelSelector
        5 optional *bool
        4 path! string
    """,
    "PortworxVolumeSource": "1 volumeID! string; 2 fsType string; 3 readOnly bool",
    "ScaleIOVolumeSource": """
        1 gateway! string
        2 system! string
        3 secretRef! *LocalObjectReference
        4 sslEnabled bool
        5 protectionDomain string
        6 storagePool string
        7 storageMode string
        8 volumeName string
        9 fsType string
        10 readOnly bool
    """,
    "StorageOSVolumeSource": """
        1 volumeName string
        2 volumeNamespace string
        3 fsType string
        4 readOnly bool
        5 secretRef *LocalObjectReference
    """,
    "CSIVolumeSource": """
        1 driver! string
        2 readOnly *bool
        3 fsType *string
        4 volumeAttributes map[string]string
        5 nodePublishSecretRef *LocalObjectReference
    """,
    "EphemeralVolumeSource": "1 volumeClaimTemplate *PersistentVolumeClaimTemplate",
    "PersistentVolumeClaimTemplate": "1 metadata ObjectMeta; 2 spec! PersistentVolumeClaimSpec",
    "PersistentVolumeClaimSpec": """
        1 accessModes []string
        4 selector *LabelSelector
        2 resources VolumeResourceRequirements
        3 volumeName string
        5 storageClassName *string
        6 volumeMode *string
        7 dataSource *TypedLocalObjectReference
        8 dataSourceRef *TypedObjectReference
        9 volumeAttributesClassName *string
    """,
    "VolumeResourceRequirements": "1 limits map[string]Quantity; 2 requests map[string]Quantity",
    "TypedObjectReference": """
        1 apiGroup! *string
        2 kind! string
        3 name! string
        4 namespace *string
    """,
    "ImageVolumeSource": "1 reference string; 2 pullPolicy string",
}

_STATUS: dict[str, str] = {
    "PodStatus": """
        17 observedGeneration int64
        1 phase string
        2 conditions []PodCondition
        3 message string
        4 reason string
        11 nominatedNodeName string
        5 hostIP string
        16 hostIPs []HostIP
        6 podIP string
        12 podIPs []PodIP
        7 startTime *Time
        10 initContainerStatuses []ContainerStatus
        8 containerStatuses []ContainerStatus
        9 qosClass string
        13 ephemeralContainerStatuses []ContainerStatus
        14 resize string
        15 resourceClaimStatuses []PodResourceClaimStatus
    """,
    "PodCondition": """
        1 type! string
        7 observedGeneration int64
        2 status! string
        3 lastProbeTime Time
        4 lastTransitionTime Time
        5 reason string
        6 message string
    """,
    "HostIP": "1 ip! string",
    "PodIP": "1 ip! string",
    "ContainerStatus": """
        1 name! string
        2 state ContainerState
        3 lastState ContainerState
        4 ready! bool
        5 restartCount! int32
        6 image! string
        7 imageID! string
        8 containerID string
        9 started *bool
        10 allocatedResources map[string]Quantity
        11 resources *ResourceRequirements
        12 volumeMounts []VolumeMountStatus
        13 user *ContainerUser
        14 allocatedResourcesStatus []ResourceStatus
        15 stopSignal *string
    """,
    "ContainerState": """
        1 waiting *ContainerStateWaiting
        2 running *ContainerStateRunning
        3 terminated *ContainerStateTerminated
    """,
    "ContainerStateWaiting": "1 reason string; 2 message string",
    "ContainerStateRunning": "1 startedAt Time",
    "ContainerStateTerminated": """
        1 exitCode! int32
        2 signal int32
        3 reason string
        4 message string
        5 startedAt Time
        6 finishedAt Time
        7 containerID string
    """,
    "VolumeMountStatus": """
        1 name! string
        2 mountPath! string
        3 readOnly bool
        4 recursiveReadOnly *string
    """,
    "ContainerUser": "1 linux *LinuxContainerUser",
    "LinuxContainerUser": "1 uid! int64; 2 gid! int64; 3 supplementalGroups []int64",
    "ResourceStatus": "1 name! string; 2 resources []ResourceHealth",
    "ResourceHealth": "1 resourceID! string; 2 health string",
    "PodResourceClaimStatus": "1 name! string; 2 resourceClaimName *string",
}

POD_MESSAGES: dict[str, str] = {**_SPEC, **_VOLUMES, **_STATUS}
