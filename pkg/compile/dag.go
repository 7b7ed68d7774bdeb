package compile

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// ErrDuplicateTemplate is returned when two steps would share a template name.
var ErrDuplicateTemplate = errors.New("duplicate template name")

// ErrCycle is returned when the tasks' dependencies form a cycle.
var ErrCycle = errors.New("dependency cycle")

// dag collects a Workflow's templates and DAG tasks, then emits them in a defined order.
type dag struct {
	templates []wfv1.Template
	names     map[string]bool
	tasks     []wfv1.DAGTask
	deps      map[string][]string
}

func newDAG() *dag {
	return &dag{names: map[string]bool{}, deps: map[string][]string{}}
}

func (d *dag) addTemplate(t wfv1.Template) error {
	if d.names[t.Name] {
		return fmt.Errorf("template %q: %w", t.Name, ErrDuplicateTemplate)
	}
	d.names[t.Name] = true
	d.templates = append(d.templates, t)
	return nil
}

// addTask adds a task that runs once all of after have succeeded. Enhanced `depends` with
// .Succeeded keeps a skipped or failed parent from releasing its children.
func (d *dag) addTask(t wfv1.DAGTask, after ...string) {
	after = slices.Clone(after)
	slices.Sort(after)
	d.deps[t.Name] = after
	parts := make([]string, len(after))
	for i, a := range after {
		parts[i] = a + ".Succeeded"
	}
	t.Depends = strings.Join(parts, " && ")
	d.tasks = append(d.tasks, t)
}

// build checks the graph (every dependency known, no cycle) and returns the entry template
// followed by the step templates, tasks in topological order.
func (d *dag) build(entrypoint string) ([]wfv1.Template, error) {
	ordered, err := d.topological()
	if err != nil {
		return nil, err
	}
	if d.names[entrypoint] {
		return nil, fmt.Errorf("template %q: %w", entrypoint, ErrDuplicateTemplate)
	}
	main := wfv1.Template{Name: entrypoint, DAG: &wfv1.DAGTemplate{Tasks: ordered}}
	return append([]wfv1.Template{main}, d.templates...), nil
}

// topological visits each task once, depth first, dependencies before dependents; ties keep
// the order tasks were added in.
func (d *dag) topological() ([]wfv1.DAGTask, error) {
	byName := make(map[string]wfv1.DAGTask, len(d.tasks))
	for _, t := range d.tasks {
		if _, dup := byName[t.Name]; dup {
			return nil, fmt.Errorf("task %q added twice", t.Name)
		}
		byName[t.Name] = t
	}
	const (
		unvisited = iota
		visiting
		done
	)
	state := make(map[string]int, len(d.tasks))
	var out []wfv1.DAGTask
	var visit func(name string, path []string) error
	visit = func(name string, path []string) error {
		switch state[name] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("%w: %s", ErrCycle, strings.Join(append(path, name), " -> "))
		}
		t, ok := byName[name]
		if !ok {
			return fmt.Errorf("task %q depends on unknown task %q", path[len(path)-1], name)
		}
		state[name] = visiting
		for _, dep := range d.deps[name] {
			if err := visit(dep, append(path, name)); err != nil {
				return err
			}
		}
		state[name] = done
		out = append(out, t)
		return nil
	}
	for _, t := range d.tasks {
		if err := visit(t.Name, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}
