package cli

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/lockchaos/lockchaos/scenarios"
)

// `lockchaos k8s` writes manifests that decode strictly (no unknown field,
// every type right) into the Kubernetes API's own types (k8s.io/api
// v0.37), and that hang together: an Indexed Job of N workers whose
// arguments the worker command accepts, each with its completion index;
// a merge Job over every worker's directory; every volume and env var
// used is defined; the scenario in the ConfigMap loads as the one given;
// the password comes from a Secret and appears nowhere.
func TestK8sManifestsValidate(t *testing.T) {
	code, out, errOut := lockchaos(t, "k8s", "gc-pause", "--clients", "8", "--workers", "4", "--addrs", "redis.redis.svc:6379",
		"--image", "lockchaos/lockchaos:local", "--run-id", "ci1", "--password-secret", "redis-auth", "--namespace", "chaos")
	wantExit(t, code, 0, out, errOut)
	docs := regexp.MustCompile(`(?m)^---\s*$`).Split(out, -1)
	var cm corev1.ConfigMap
	var pvc corev1.PersistentVolumeClaim
	var jobs []batchv1.Job
	for _, d := range docs {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(d, "")) == "" {
			continue
		}
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(d), &head); err != nil {
			t.Fatalf("%v\n%s", err, d)
		}
		// As the API server decodes: case-sensitive, no unknown or
		// duplicate field (sigs.k8s.io/json).
		js, err := yaml.YAMLToJSON([]byte(d))
		if err != nil {
			t.Fatal(err)
		}
		var strict []error
		switch head.Kind {
		case "ConfigMap":
			strict, err = kjson.UnmarshalStrict(js, &cm, kjson.DisallowUnknownFields, kjson.DisallowDuplicateFields)
		case "PersistentVolumeClaim":
			strict, err = kjson.UnmarshalStrict(js, &pvc, kjson.DisallowUnknownFields, kjson.DisallowDuplicateFields)
		case "Job":
			var j batchv1.Job
			strict, err = kjson.UnmarshalStrict(js, &j, kjson.DisallowUnknownFields, kjson.DisallowDuplicateFields)
			jobs = append(jobs, j)
		default:
			t.Fatalf("unexpected kind %q", head.Kind)
		}
		if err != nil || len(strict) > 0 {
			t.Fatalf("%s does not decode strictly into the Kubernetes type: %v %v\n%s", head.Kind, err, strict, d)
		}
	}
	if cm.Name == "" || pvc.Name == "" || len(jobs) != 2 {
		t.Fatalf("want a ConfigMap, a PVC and 2 Jobs; got %q, %q, %d jobs", cm.Name, pvc.Name, len(jobs))
	}
	if !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) || pvc.Spec.Resources.Requests.Storage().String() != "1Gi" {
		t.Errorf("pvc: %+v", pvc.Spec)
	}
	for _, o := range []string{cm.Namespace, pvc.Namespace, jobs[0].Namespace, jobs[1].Namespace} {
		if o != "chaos" {
			t.Errorf("namespace %q, want chaos", o)
		}
	}
	// The scenario travels in the ConfigMap and loads as given.
	sf := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(sf, []byte(cm.Data["scenario.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.Load(sf)
	if err != nil {
		t.Fatalf("the ConfigMap's scenario does not load: %v", err)
	}
	if s.Name != "gc-pause" || s.Workload.Clients != 8 || len(s.Faults) != 1 {
		t.Errorf("scenario %s, %d clients, %d faults: want gc-pause, 8, 1", s.Name, s.Workload.Clients, len(s.Faults))
	}

	w, m := jobs[0], jobs[1]
	if w.Spec.CompletionMode == nil || *w.Spec.CompletionMode != batchv1.IndexedCompletion ||
		*w.Spec.Completions != 4 || *w.Spec.Parallelism != 4 || *w.Spec.BackoffLimit != 0 || w.Spec.ActiveDeadlineSeconds == nil {
		t.Errorf("workers job spec: %+v", w.Spec)
	}
	for _, j := range jobs {
		pod := j.Spec.Template.Spec
		if pod.RestartPolicy != corev1.RestartPolicyNever || len(pod.Containers) != 1 {
			t.Fatalf("%s: restart policy %q, %d containers", j.Name, pod.RestartPolicy, len(pod.Containers))
		}
		c := pod.Containers[0]
		vols := map[string]corev1.Volume{}
		for _, v := range pod.Volumes {
			vols[v.Name] = v
		}
		for _, vm := range c.VolumeMounts {
			if _, ok := vols[vm.Name]; !ok {
				t.Errorf("%s mounts volume %q, which the pod does not define", j.Name, vm.Name)
			}
		}
		if v := vols["runs"]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != pvc.Name {
			t.Errorf("%s: runs volume %+v is not the PVC %s", j.Name, v, pvc.Name)
		}
		if v := vols["scenario"]; v.ConfigMap == nil || v.ConfigMap.Name != cm.Name {
			t.Errorf("%s: scenario volume %+v is not the ConfigMap %s", j.Name, v, cm.Name)
		}
		env := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			env[e.Name] = e
		}
		for _, ref := range regexp.MustCompile(`\$\(([A-Z_]+)\)`).FindAllStringSubmatch(strings.Join(c.Args, " "), -1) {
			if _, ok := env[ref[1]]; !ok {
				t.Errorf("%s: its args use $(%s), which its env does not define", j.Name, ref[1])
			}
		}
		// The arguments are ones our own commands accept.
		args := strings.ReplaceAll(strings.Join(c.Args, "\x00"), "$(LOCKCHAOS_INDEX)", "3")
		var cmd interface {
			ParseFlags([]string) error
		}
		switch c.Args[0] {
		case "worker":
			cmd = newWorkerCmd(io.Discard, io.Discard)
		case "merge":
			cmd = newMergeCmd(io.Discard)
		default:
			t.Fatalf("%s runs %q", j.Name, c.Args[0])
		}
		if err := cmd.ParseFlags(strings.Split(args, "\x00")[1:]); err != nil {
			t.Errorf("%s: lockchaos %s does not accept its args %q: %v", j.Name, c.Args[0], c.Args, err)
		}
	}
	wc := w.Spec.Template.Spec.Containers[0]
	if idx := w.Spec.Template.Spec.Containers[0].Env[0]; idx.Name != "LOCKCHAOS_INDEX" || idx.ValueFrom == nil || idx.ValueFrom.FieldRef == nil ||
		idx.ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("the worker's index is not its completion index: %+v", idx)
	}
	pw := false
	for _, e := range wc.Env {
		if e.Name == "LOCKCHAOS_REDIS_PASSWORD" {
			pw = e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == "redis-auth"
		}
	}
	if !pw {
		t.Error("the password does not come from the Secret redis-auth")
	}
	if n := len(m.Spec.Template.Spec.Containers[0].Args); !slices.Contains(m.Spec.Template.Spec.Containers[0].Args, "/runs/ci1/w3") || n < 4+4 {
		t.Errorf("merge args %q do not list every worker's directory", m.Spec.Template.Spec.Containers[0].Args)
	}

	// Bad input names its flag, and writes nothing.
	for _, bad := range [][]string{
		{"--workers", "9"}, {"--run-id", "Bad_ID"}, {"--image", ""}, {"--storage", "lots"},
	} {
		args := append([]string{"k8s", "gc-pause", "--clients", "8", "--workers", "4", "--addrs", "r:6379", "--image", "i", "--run-id", "ok1"}, bad...)
		code, out, errOut := lockchaos(t, args...)
		if code != 3 || out != "" || !strings.Contains(errOut, strings.TrimPrefix(bad[0], "--")) {
			t.Errorf("k8s %v: exit %d, stdout %q, stderr %q: want exit 3 naming %s and no manifests", bad, code, out, errOut, bad[0])
		}
	}
}
