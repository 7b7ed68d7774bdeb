package checketcdmembers_test

import (
	"strings"
	"testing"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checketcdmembers"
)

// A three-member etcd as kubespray makes it (etcdctl member list -w json, etcd 3.5).
const threeMembers = `{"header":{"cluster_id":14841639068965178418,"member_id":10276657743932975437,"raft_term":2},
"members":[
 {"ID":10276657743932975437,"name":"etcd1","peerURLs":["https://10.0.0.11:2380"],"clientURLs":["https://10.0.0.11:2379"]},
 {"ID":4214226474329741331,"name":"etcd2","peerURLs":["https://10.0.0.12:2380"],"clientURLs":["https://10.0.0.12:2379"]},
 {"ID":18249187646912138824,"name":"etcd3","peerURLs":["https://10.0.0.13:2380"],"clientURLs":["https://10.0.0.13:2379"]}]}`

var hosts = []bpav1.Node{
	{Label: "m1", Role: "master", IP: "10.0.0.11"},
	{Label: "m2", Role: "master", IP: "10.0.0.12"},
	{Label: "m3", Role: "master", IP: "10.0.0.13"},
	{Label: "m4", Role: "master", IP: "10.0.0.14"},
	{Label: "w1", Role: "worker", IP: "10.0.0.21"},
}

// TestCompare: the members match the expected nodes by IP, whatever kubespray named them, and
// every difference is named with both sides.
func TestCompare(t *testing.T) {
	members, err := checketcdmembers.Parse([]byte(threeMembers))
	if err != nil {
		t.Fatal(err)
	}
	if members[2].ID != 18249187646912138824 {
		t.Errorf("ID = %d: a 64-bit ID must survive parsing exactly", members[2].ID)
	}
	notStarted := append(members[:3:3], checketcdmembers.Member{ID: 7, PeerURLs: []string{"https://10.0.0.14:2380"}})
	learner := append(members[:3:3], checketcdmembers.Member{ID: 8, Name: "etcd4", PeerURLs: []string{"https://10.0.0.14:2380"}, IsLearner: true})
	for _, tc := range []struct {
		name     string
		members  []checketcdmembers.Member
		expected []string
		want     string
	}{
		{name: "the same three, any order", members: members, expected: []string{"m3", "m1", "m2"}},
		{name: "one fewer than planned", members: members[:2], expected: []string{"m1", "m2", "m3"},
			want: "etcd's members are not the 3 the cluster's record names (m1 10.0.0.11, m2 10.0.0.12, m3 10.0.0.13): node m3 is not a member; etcd has etcd1 (https://10.0.0.11:2380), etcd2 (https://10.0.0.12:2380)"},
		{name: "one the record does not name", members: members, expected: []string{"m1", "m2"},
			want: "etcd3 (https://10.0.0.13:2380) is not a node the cluster's record names"},
		{name: "added, never started", members: notStarted, expected: []string{"m1", "m2", "m3", "m4"},
			want: "node m4 is a member not started yet (https://10.0.0.14:2380), not a started voting member"},
		{name: "a learner", members: learner, expected: []string{"m1", "m2", "m3", "m4"},
			want: "node m4 is etcd4 (https://10.0.0.14:2380), a learner, not a started voting member"},
		{name: "an expected node not among the hosts", members: members, expected: []string{"m1", "m9"},
			want: `etcd member "m9" is not among the addressed hosts`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checketcdmembers.Compare(tc.members, tc.expected, hosts)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want a match", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	for _, raw := range []string{
		``, `[]`, `{}`, `{"members":[]}`,
		`{"members":[{"ID":1,"name":"a","peerURLs":[]}]}`,
		`{"members":[{"ID":1,"name":"a","peerURLs":["https://node-1:2380"]}]}`,
		`{"members":[{"ID":1,"name":"a","peerURLs":["://"]}]}`,
	} {
		if _, err := checketcdmembers.Parse([]byte(raw)); err == nil {
			t.Errorf("Parse(%q) = nil error, want a refusal", raw)
		}
	}
}

// FuzzParse: etcdctl's output is outside input; whatever it is, Parse returns members it can
// compare or an error, and never panics.
func FuzzParse(f *testing.F) {
	f.Add([]byte(threeMembers))
	f.Add([]byte(`{"members":[{"ID":1,"peerURLs":["http://[::1]:2380"],"isLearner":true}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		members, err := checketcdmembers.Parse(raw)
		if err != nil {
			return
		}
		_ = checketcdmembers.Compare(members, []string{"m1"}, hosts)
		for _, m := range members {
			_ = m.String()
		}
	})
}
