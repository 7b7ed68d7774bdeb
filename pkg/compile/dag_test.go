package compile

import (
	"errors"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

func TestDAGRefusesCyclesAndDuplicates(t *testing.T) {
	d := newDAG()
	d.addTask(wfv1.DAGTask{Name: "a"}, "c")
	d.addTask(wfv1.DAGTask{Name: "b"}, "a")
	d.addTask(wfv1.DAGTask{Name: "c"}, "b")
	if _, err := d.build("main"); !errors.Is(err, ErrCycle) {
		t.Errorf("a cycle a -> c -> b -> a: got %v, want ErrCycle", err)
	}

	d = newDAG()
	if err := d.addTemplate(wfv1.Template{Name: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := d.addTemplate(wfv1.Template{Name: "x"}); !errors.Is(err, ErrDuplicateTemplate) {
		t.Errorf("a second template x: got %v, want ErrDuplicateTemplate", err)
	}
	if _, err := d.build("x"); !errors.Is(err, ErrDuplicateTemplate) {
		t.Errorf("an entrypoint named like a step template: got %v, want ErrDuplicateTemplate", err)
	}

	d = newDAG()
	d.addTask(wfv1.DAGTask{Name: "a"}, "ghost")
	if _, err := d.build("main"); err == nil {
		t.Error("a dependency on an unknown task was accepted")
	}
}

func TestDAGOrdersDependenciesFirst(t *testing.T) {
	d := newDAG()
	d.addTask(wfv1.DAGTask{Name: "late"}, "early", "middle")
	d.addTask(wfv1.DAGTask{Name: "middle"}, "early")
	d.addTask(wfv1.DAGTask{Name: "early"})
	templates, err := d.build("main")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, task := range templates[0].DAG.Tasks {
		names = append(names, task.Name)
	}
	if len(names) != 3 || names[0] != "early" || names[1] != "middle" || names[2] != "late" {
		t.Errorf("order %v, want early, middle, late", names)
	}
	if got := templates[0].DAG.Tasks[2].Depends; got != "early.Succeeded && middle.Succeeded" {
		t.Errorf("depends %q: sorted, each .Succeeded", got)
	}
}
