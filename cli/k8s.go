package cli

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lockchaos/lockchaos/keyspace"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// k8sOptions describe a run spread over Kubernetes pods: one Indexed Job
// whose pods are the workers (each its completion index), and one Job that
// waits for their directories and merges them, on a shared volume.
type k8sOptions struct {
	Scenario *scenarios.Scenario
	Lock     string
	Workers  int
	RunID    string
	// Addrs of the deployment under test, as the pods reach it (e.g.
	// redis.redis.svc:6379).
	Addrs []string
	// Image of lockchaos itself (scripts/lockchaos-image.sh builds one).
	Image     string
	Namespace string
	// Storage is the size of the shared volume for the histories;
	// StorageClass its class (it must offer ReadWriteMany: the workers'
	// pods and the merge pod mount it at once). "" is the cluster's
	// default class.
	Storage      string
	StorageClass string
	// PasswordSecret names a Secret whose key "password" is the
	// deployment's AUTH password (never written into the manifests).
	PasswordSecret string
	// CPU each worker requests (e.g. "1").
	CPU string
	// Barrier is each worker's --barrier-timeout.
	Barrier time.Duration
}

// The manifests' shapes: only the fields written, with the Kubernetes API's
// JSON names (the tests decode them strictly into k8s.io/api's types).
type (
	k8sMeta struct {
		Name      string            `yaml:"name,omitempty"`
		Namespace string            `yaml:"namespace,omitempty"`
		Labels    map[string]string `yaml:"labels,omitempty"`
	}
	k8sObject struct {
		APIVersion string  `yaml:"apiVersion"`
		Kind       string  `yaml:"kind"`
		Metadata   k8sMeta `yaml:"metadata"`
		Spec       any     `yaml:"spec,omitempty"`
		Data       k8sData `yaml:"data,omitempty"`
	}
	k8sData map[string]string
	pvcSpec struct {
		AccessModes      []string  `yaml:"accessModes"`
		StorageClassName *string   `yaml:"storageClassName,omitempty"`
		Resources        resources `yaml:"resources"`
	}
	jobSpec struct {
		CompletionMode        string      `yaml:"completionMode,omitempty"`
		Completions           int         `yaml:"completions"`
		Parallelism           int         `yaml:"parallelism"`
		BackoffLimit          int         `yaml:"backoffLimit"`
		ActiveDeadlineSeconds int64       `yaml:"activeDeadlineSeconds"`
		Template              podTemplate `yaml:"template"`
	}
	podTemplate struct {
		Metadata k8sMeta `yaml:"metadata"`
		Spec     podSpec `yaml:"spec"`
	}
	podSpec struct {
		RestartPolicy string      `yaml:"restartPolicy"`
		Containers    []container `yaml:"containers"`
		Volumes       []volume    `yaml:"volumes"`
	}
	container struct {
		Name         string        `yaml:"name"`
		Image        string        `yaml:"image"`
		Args         []string      `yaml:"args"`
		Env          []envVar      `yaml:"env,omitempty"`
		Resources    *resources    `yaml:"resources,omitempty"`
		VolumeMounts []volumeMount `yaml:"volumeMounts"`
	}
	resources struct {
		Requests map[string]string `yaml:"requests"`
	}
	envVar struct {
		Name      string     `yaml:"name"`
		ValueFrom *envSource `yaml:"valueFrom,omitempty"`
	}
	envSource struct {
		FieldRef     *fieldRef     `yaml:"fieldRef,omitempty"`
		SecretKeyRef *secretKeyRef `yaml:"secretKeyRef,omitempty"`
	}
	fieldRef struct {
		FieldPath string `yaml:"fieldPath"`
	}
	secretKeyRef struct {
		Name string `yaml:"name"`
		Key  string `yaml:"key"`
	}
	volumeMount struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly,omitempty"`
	}
	volume struct {
		Name                  string        `yaml:"name"`
		PersistentVolumeClaim *pvcSource    `yaml:"persistentVolumeClaim,omitempty"`
		ConfigMap             *configMapSrc `yaml:"configMap,omitempty"`
	}
	pvcSource struct {
		ClaimName string `yaml:"claimName"`
	}
	configMapSrc struct {
		Name string `yaml:"name"`
	}
)

// k8sManifests writes the manifests of a run spread over Kubernetes pods, as
// one YAML stream for kubectl apply -f: a ConfigMap holding the scenario, a
// ReadWriteMany PersistentVolumeClaim for the runs, the workers' Indexed
// Job and the merge Job.
func k8sManifests(o k8sOptions) ([]byte, error) {
	if err := checkK8s(o); err != nil {
		return nil, err
	}
	s := o.Scenario
	scen, err := yaml.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	name := "lockchaos-" + o.RunID
	labels := map[string]string{"app.kubernetes.io/name": "lockchaos", "lockchaos/run-id": o.RunID}
	meta := func(n string) k8sMeta { return k8sMeta{Name: n, Namespace: o.Namespace, Labels: labels} }
	mounts := []volumeMount{{Name: "runs", MountPath: "/runs"}, {Name: "scenario", MountPath: "/scenario", ReadOnly: true}}
	volumes := []volume{{Name: "runs", PersistentVolumeClaim: &pvcSource{ClaimName: name}},
		{Name: "scenario", ConfigMap: &configMapSrc{Name: name}}}
	barrier := o.Barrier
	if barrier <= 0 {
		barrier = 10 * time.Minute
	}
	// A pod never runs longer than the run, its barriers and the check.
	deadline := int64((s.Duration + s.Recovery + 2*barrier + 10*time.Minute) / time.Second)

	var env []envVar
	env = append(env, envVar{Name: "LOCKCHAOS_INDEX", ValueFrom: &envSource{FieldRef: &fieldRef{
		FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}})
	if o.PasswordSecret != "" {
		env = append(env, envVar{Name: "LOCKCHAOS_REDIS_PASSWORD", ValueFrom: &envSource{SecretKeyRef: &secretKeyRef{Name: o.PasswordSecret, Key: "password"}}})
	}
	var res *resources
	if o.CPU != "" {
		res = &resources{Requests: map[string]string{"cpu": o.CPU}}
	}
	var sc *string
	if o.StorageClass != "" {
		sc = &o.StorageClass
	}
	objs := []k8sObject{
		{APIVersion: "v1", Kind: "ConfigMap", Metadata: meta(name), Data: k8sData{"scenario.yaml": string(scen)}},
		{APIVersion: "v1", Kind: "PersistentVolumeClaim", Metadata: meta(name), Spec: pvcSpec{AccessModes: []string{"ReadWriteMany"},
			StorageClassName: sc, Resources: resources{Requests: map[string]string{"storage": o.Storage}}}},
		{APIVersion: "batch/v1", Kind: "Job", Metadata: meta(name + "-workers"), Spec: jobSpec{
			CompletionMode: "Indexed", Completions: o.Workers, Parallelism: o.Workers,
			// A retried worker would join its run's barrier twice.
			BackoffLimit: 0, ActiveDeadlineSeconds: deadline,
			Template: podTemplate{Metadata: k8sMeta{Labels: labels}, Spec: podSpec{RestartPolicy: "Never", Volumes: volumes,
				Containers: []container{{Name: "worker", Image: o.Image, Args: workerArgs(o, barrier), Env: env, Resources: res, VolumeMounts: mounts}}}}}},
		{APIVersion: "batch/v1", Kind: "Job", Metadata: meta(name + "-merge"), Spec: jobSpec{
			Completions: 1, Parallelism: 1, BackoffLimit: 0, ActiveDeadlineSeconds: deadline,
			Template: podTemplate{Metadata: k8sMeta{Labels: labels}, Spec: podSpec{RestartPolicy: "Never", Volumes: volumes,
				Containers: []container{{Name: "merge", Image: o.Image, Args: mergeArgs(o, barrier), VolumeMounts: mounts}}}}}},
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# lockchaos: %s with lock %s over %d workers (run %s). kubectl apply -f this file; the\n"+
		"# merged run is /runs/%s/merged on the volume %s (kubectl logs job/%s-merge shows its verdict).\n",
		s.Name, o.Lock, o.Workers, o.RunID, o.RunID, name, name)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	for _, obj := range objs {
		if err := enc.Encode(obj); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// checkK8s refuses options that cannot make a run, naming the flag.
func checkK8s(o k8sOptions) error {
	s := o.Scenario
	switch {
	case s == nil:
		return badFlag("scenario", "none")
	case o.Workers < 1 || o.Workers > s.Workload.Clients:
		return badFlag("workers", "%d is not in 1..%d (the scenario's clients)", o.Workers, s.Workload.Clients)
	case len(o.Addrs) == 0:
		return badFlag("addrs", "the deployment's addresses as the pods reach them (e.g. redis.redis.svc:6379)")
	case o.Image == "":
		return badFlag("image", "the lockchaos image the pods run (scripts/lockchaos-image.sh builds one)")
	}
	if err := (&runner.Worker{RunID: o.RunID, Count: o.Workers}).Check(s.Workload.Clients, runner.Options{Setup: runner.Setup{Backend: "external"}}); err != nil {
		return err
	}
	if err := keyspace.Check(o.RunID); err != nil || !dns1123(o.RunID) {
		return badFlag("run-id", "%q: lower-case letters, digits and '-' (it names the Kubernetes objects)", o.RunID)
	}
	if _, err := strconv.ParseFloat(strings.TrimRight(o.Storage, "KMGTPEi"), 64); o.Storage == "" || err != nil {
		return badFlag("storage", "%q is not a quantity such as 1Gi", o.Storage)
	}
	return nil
}

// workerArgs are a worker pod's lockchaos command line (its index from the
// Job's completion index).
func workerArgs(o k8sOptions, barrier time.Duration) []string {
	return []string{"worker", "/scenario/scenario.yaml", "--lock", o.Lock, "--backend", "external",
		"--addrs", strings.Join(o.Addrs, ","), "--allow-remote", "--run-id", o.RunID,
		"--workers", strconv.Itoa(o.Workers), "--index", "$(LOCKCHAOS_INDEX)",
		"--barrier-timeout", barrier.String(), "--out", "/runs/" + o.RunID + "/w$(LOCKCHAOS_INDEX)", "-q"}
}

// mergeArgs are the merge pod's: it waits for every worker's directory.
func mergeArgs(o k8sOptions, barrier time.Duration) []string {
	s := o.Scenario
	args := []string{"merge", "--wait", (2*barrier + s.Duration + s.Recovery + 5*time.Minute).String(), "--out", "/runs/" + o.RunID + "/merged"}
	for i := range o.Workers {
		args = append(args, fmt.Sprintf("/runs/%s/w%d", o.RunID, i))
	}
	return args
}

// dns1123 reports whether s can name Kubernetes objects (a DNS label).
func dns1123(s string) bool {
	if s == "" || len(s) > 40 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}
