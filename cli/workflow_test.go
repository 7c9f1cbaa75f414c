package cli

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// workflow is a GitHub Actions workflow with the keys the example uses
// (decoded with known fields only: a misspelt key fails).
type workflow struct {
	Name        string            `yaml:"name"`
	On          map[string]any    `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Env         map[string]string `yaml:"env"`
	Jobs        map[string]struct {
		Name    string `yaml:"name"`
		If      string `yaml:"if"`
		RunsOn  string `yaml:"runs-on"`
		Timeout int    `yaml:"timeout-minutes"`
		Steps   []struct {
			Name string         `yaml:"name"`
			Uses string         `yaml:"uses"`
			Run  string         `yaml:"run"`
			If   string         `yaml:"if"`
			With map[string]any `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// The example workflow parses as YAML into a workflow's shape, every
// lockchaos command line in it is accepted by the real cobra commands
// (flags, their values' types, argument counts), and it runs what it
// promises: the conformance suite, run and matrix with JUnit, the bench
// with the regression gate, the reports uploaded even on failure.
func TestGitHubActionsExample(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "examples", "ci", "github-actions.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	if err := dec.Decode(&wf); err != nil {
		t.Fatalf("github-actions.yml: %v", err)
	}
	if _, pr := wf.On["pull_request"]; wf.Name == "" || !pr || len(wf.Jobs) == 0 {
		t.Fatalf("not a workflow: name %q, on %v, %d jobs", wf.Name, wf.On, len(wf.Jobs))
	}
	ran := map[string]int{} // lockchaos subcommand → lines
	uploads, goTest := 0, false
	for name, job := range wf.Jobs {
		if job.RunsOn == "" || len(job.Steps) == 0 {
			t.Errorf("job %s: runs-on %q, %d steps", name, job.RunsOn, len(job.Steps))
		}
		for _, st := range job.Steps {
			if (st.Uses == "") == (st.Run == "") {
				t.Errorf("job %s step %q: want exactly one of uses and run", name, st.Name)
			}
			if strings.HasPrefix(st.Uses, "actions/upload-artifact@") {
				uploads++
				if st.If != "always()" || !strings.HasPrefix(st.With["path"].(string), "reports") {
					t.Errorf("job %s uploads %v if %q: want the reports directory, always", name, st.With["path"], st.If)
				}
			}
			for _, line := range shellLines(st.Run) {
				args := shellWords(line, wf.Env)
				if len(args) > 1 && args[0] == "go" && args[1] == "test" {
					goTest = true
				}
				if len(args) == 0 || !strings.Contains(filepath.Base(args[0]), "lockchaos") {
					continue
				}
				root := newRoot(io.Discard, io.Discard)
				cmd, rest, err := root.Find(args[1:])
				if err != nil || cmd == root {
					t.Errorf("job %s: %q: no such lockchaos command (%v)", name, line, err)
					continue
				}
				if err := cmd.ParseFlags(rest); err != nil {
					t.Errorf("job %s: %q: %v", name, line, err)
					continue
				}
				if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
					t.Errorf("job %s: %q: %v", name, line, err)
				}
				if cmd.Name() == "run" || cmd.Name() == "matrix" {
					if j, _ := cmd.Flags().GetString("junit"); j == "" {
						t.Errorf("job %s: %q writes no JUnit", name, line)
					}
				}
				if cmd.Name() == "compare" {
					if mr, _ := cmd.Flags().GetString("max-regression"); !cmd.Flags().Changed("max-regression") {
						t.Errorf("job %s: %q: the gate leaves --max-regression at its default %s", name, line, mr)
					}
				}
				ran[cmd.Name()]++
			}
		}
	}
	for _, c := range []string{"version", "run", "matrix", "bench", "compare"} {
		if ran[c] == 0 {
			t.Errorf("no lockchaos %s line in the workflow (lines: %v)", c, ran)
		}
	}
	if ran["bench"] != 2 || !goTest || uploads < 2 {
		t.Errorf("bench lines %d (want base and new), go test %v, uploads %d", ran["bench"], goTest, uploads)
	}
}

// shellLines are a run block's command lines: continuation lines joined,
// comments dropped, each cut at its first pipe, redirection or && (what
// follows is another command).
func shellLines(run string) []string {
	var out []string
	for _, l := range strings.Split(strings.ReplaceAll(run, "\\\n", " "), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		for _, part := range strings.Split(l, "&&") {
			part = strings.TrimSpace(strings.Trim(strings.TrimSpace(part), "()"))
			if i := strings.IndexAny(part, "|>;"); i >= 0 {
				part = part[:i]
			}
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

// shellWords splits line as the shell would for these simple lines:
// quotes group, $NAME and "$NAME" take the workflow's env (others stay as
// written).
func shellWords(line string, env map[string]string) []string {
	var words []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote == 0 && (r == '"' || r == '\''):
			quote, in = r, true
		case quote == 0 && (r == ' ' || r == '\t'):
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	for i, w := range words {
		if strings.HasPrefix(w, "$") {
			if v, ok := env[strings.Trim(w[1:], "{}")]; ok {
				words[i] = v
			}
		}
	}
	return slices.Clip(words)
}
