package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockchaos/lockchaos/keyspace"
	"github.com/lockchaos/lockchaos/report"
	"github.com/lockchaos/lockchaos/runner"
)

func newWorkerCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		cf        clusterFlags
		of        overrideFlags
		lock, out string
		wk        runner.Worker
		quiet     bool
	)
	cmd := &cobra.Command{
		Use:   "worker NAME|FILE.yaml --index I --workers N --run-id ID --addrs ...",
		Short: "Run one worker's share of a scenario's clients against an external deployment",
		Long: `Worker runs clients I, I+N, I+2N, ... of the scenario (I = --index, N =
--workers) against an external deployment (--addrs), one process per worker,
on one machine or many. The workers meet at a barrier kept in Redis itself
(keys lc:<run id>#workers:*, removed at the end), start their workloads at
one instant of the server's clock, and each writes its own run directory
with its clock's offset to the server's TIME, measured at the start and at
the end (worker.json). 'lockchaos merge' joins the directories into one
run that check and report accept; the checker treats an overlap shorter
than two workers' combined clock uncertainty as unknown, never invalid.

Worker 0 is the coordinator: it alone observes the server's keyspace
events, fires the faults that name no client of another worker (holder,
random-client, any-client: among its own clients) and removes the run's
keys once every worker is done. A fault aimed at client:N fires in N's
worker. Every worker must be given the same scenario, lock, seed, --run-id
and --workers.`,
		Example: `  # three workers, one per terminal or pod, then the merge:
  lockchaos worker contention --lock simple --addrs 127.0.0.1:6379 --run-id r42 --workers 3 --index 0 --out w0
  lockchaos worker contention --lock simple --addrs 127.0.0.1:6379 --run-id r42 --workers 3 --index 1 --out w1
  lockchaos worker contention --lock simple --addrs 127.0.0.1:6379 --run-id r42 --workers 3 --index 2 --out w2
  lockchaos merge --out merged w0 w1 w2`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			lock, err := resolveLock(lock) // before the scenario, as run's
			if err != nil {
				return err
			}
			s, err := of.load(cmd, args[0])
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("backend") {
				cf.backend = "external"
			}
			o := runner.Options{Scenario: s, Lock: lock, Out: out, Worker: &wk}
			if err := cf.apply(&o.Setup); err != nil {
				return err
			}
			if o.Out == "" {
				o.Out = runner.DefaultOut(fmt.Sprintf("%s-w%d", s.Name, wk.Index), lock)
			}
			if !quiet {
				o.Progress = newProgress(stderr, s.Name, lock)
			}
			fmt.Fprintf(stderr, "lockchaos: worker %d of %d of run %s: %s with lock %s\n", wk.Index, wk.Count, wk.RunID, s.Name, lock)
			res, err := runner.Run(cmd.Context(), o)
			if res != nil && res.Results != nil {
				report.WriteText(stdout, res.Results)
				fmt.Fprintf(stdout, "run directory: %s\n", res.Dir)
			}
			if err != nil {
				return exitWith(ExitCodeOf(err), err)
			}
			// A worker's own verdict covers its clients only: the merged
			// run's is the one that counts, so a finished worker exits 0.
			return nil
		},
	}
	cf.add(cmd)
	of.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&lock, "lock", "simple", "lock implementation (lockchaos list locks)")
	fl.StringVar(&out, "out", "", "this worker's run directory (created; must not hold files)")
	fl.IntVar(&wk.Index, "index", 0, "this worker's index, 0..N-1 (0 is the coordinator); a Kubernetes Indexed Job's completion index")
	fl.IntVar(&wk.Count, "workers", 1, "how many workers the run has (N)")
	fl.StringVar(&wk.RunID, "run-id", "", "the run's id, the same for every worker (its keys are lc:<run id>:...)")
	fl.DurationVar(&wk.Wait, "barrier-timeout", 2*time.Minute, "how long a worker waits for the others (to start, and the coordinator for them to finish)")
	fl.DurationVar(&wk.ClockOffset, "clock-offset", 0, "pretend this worker's wall clock is off by this much (testing the merge's clock correction)")
	_ = fl.MarkHidden("clock-offset")
	fl.BoolVarP(&quiet, "quiet", "q", false, "no progress display")
	_ = cmd.MarkFlagRequired("run-id")
	return cmd
}

func newMergeCmd(stdout io.Writer) *cobra.Command {
	var out string
	var expect bool
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "merge --out DIR WORKER-DIR...",
		Short: "Join the run directories of a run's workers into one run, and check it",
		Long: `Merge reads every worker's directory (its history and worker.json), maps
each event onto the server's clock through that worker's measured offset,
writes one history with every client into --out, and checks and reports it
like run: the exit code follows the verdict (with --expect, the scenario's
expectation). It refuses directories of different runs, scenarios, locks,
seeds or worker counts, and a set with a worker missing or twice, naming
which.`,
		Example: `  lockchaos merge --out merged w0 w1 w2`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, code, err := runner.Merge(runner.MergeOptions{Dirs: args, Out: out, Wait: wait, Eval: runner.EvalOptions{Expect: expect}})
			if r != nil {
				report.WriteText(stdout, r)
				fmt.Fprintf(stdout, "run directory: %s\n", out)
			}
			if err != nil {
				return exitWith(ExitCode(code), err)
			}
			if code != runner.Passed {
				return exitWith(ExitCode(code), nil)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the merged run's directory (created; must not hold files)")
	cmd.Flags().BoolVar(&expect, "expect", false, "exit 0 when the verdicts match the scenario's expectation")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for every worker to finish (its worker.json), e.g. in a Job started with the workers")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func newK8sCmd(stdout io.Writer) *cobra.Command {
	var (
		of  overrideFlags
		ko  k8sOptions
		out string
	)
	cmd := &cobra.Command{
		Use:   "k8s NAME|FILE.yaml --workers N --addrs ADDR --image IMAGE",
		Short: "Write Kubernetes manifests that run a scenario's clients as N worker pods, then merge them",
		Long: `K8s writes, for kubectl apply -f, the manifests of one run spread over
Kubernetes pods against a deployment the pods reach at --addrs: a ConfigMap
with the scenario, a ReadWriteMany PersistentVolumeClaim for the runs, an
Indexed Job whose N pods each run 'lockchaos worker' with their completion
index, and a Job that waits for the workers and runs 'lockchaos merge' (its
log is the verdict; the merged run is /runs/<run id>/merged on the volume).
The image is lockchaos itself: scripts/lockchaos-image.sh builds one. A
password comes from a Secret (--password-secret, key "password"), never from
the manifests. Nothing is applied: the file is yours to read and apply.`,
		Example: `  lockchaos k8s contention --lock simple --workers 8 --clients 64 --addrs redis.redis.svc:6379 \
      --image registry.example.com/lockchaos:v1 --run-id bench1 > lockchaos-bench1.yaml
  kubectl apply -f lockchaos-bench1.yaml && kubectl logs -f job/lockchaos-bench1-merge`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := of.load(cmd, args[0])
			if err != nil {
				return err
			}
			ko.Scenario = s
			if ko.RunID == "" {
				ko.RunID = keyspace.NewRunID()
			}
			b, err := k8sManifests(ko)
			if err != nil {
				return exitWith(ExitCodeOf(err), err)
			}
			if out == "" || out == "-" {
				_, err = stdout.Write(b)
				return err
			}
			return os.WriteFile(out, b, 0o644)
		},
	}
	of.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&ko.Lock, "lock", "simple", "lock implementation (built into the image)")
	fl.IntVar(&ko.Workers, "workers", 2, "worker pods (each drives clients I, I+N, ...)")
	fl.StringSliceVar(&ko.Addrs, "addrs", nil, "the deployment's addresses as the pods reach them, comma-separated")
	fl.StringVar(&ko.Image, "image", "", "the lockchaos image the pods run")
	fl.StringVar(&ko.RunID, "run-id", "", "the run's id: names the objects and the keys (default random)")
	fl.StringVar(&ko.Namespace, "namespace", "", "namespace of the objects (default: kubectl's)")
	fl.StringVar(&ko.Storage, "storage", "1Gi", "size of the runs volume")
	fl.StringVar(&ko.StorageClass, "storage-class", "", "storage class of the runs volume; it must offer ReadWriteMany (default: the cluster's)")
	fl.StringVar(&ko.PasswordSecret, "password-secret", "", "Secret whose key \"password\" is the deployment's AUTH password")
	fl.StringVar(&ko.CPU, "cpu", "1", "CPU each worker pod requests (empty: none)")
	fl.DurationVar(&ko.Barrier, "barrier-timeout", 10*time.Minute, "how long workers wait for each other (pods may be scheduled one by one)")
	fl.StringVar(&out, "out", "-", "file to write (- : standard output)")
	return cmd
}
