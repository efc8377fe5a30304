package nomadstandin

import (
	"cmp"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// A group's scaling policy as Nomad's state store keeps it (the
// scaling_policy table): one per group with a scaling block, its ID
// stable while the group keeps one, its ModifyIndex moved only when what
// it holds changes (Nomad's ScalingPolicy.Diff), and the table's index
// moved by every insert, change and delete. The nomad-autoscaler agent's
// Nomad policy source reads them through GET /v1/scaling/policies and
// GET /v1/scaling/policy/:id, both blocking queries.

// policyContent is what a policy holds besides its ID and indexes.
type policyContent struct {
	Min, Max *int64
	Enabled  bool
	Type     string
	Body     map[string]any
}

// policyState is a group's policy as last written.
type policyState struct {
	id                       string
	content                  policyContent
	createIndex, modifyIndex uint64
}

// policyOf is what g's policy holds now: the registered block, disabled
// while the job is stopped (Nomad 1.10.2 and later set Enabled false when
// a job is stopped; earlier versions left it as registered).
func policyOf(j *job, g *group) policyContent {
	return policyContent{
		Min: g.conf.ScalingMin, Max: g.conf.ScalingMax,
		Enabled: !g.conf.ScalingDisabled && !j.stopped,
		Type:    api.ScalingPolicyTypeHorizontal,
		Body:    g.conf.ScalingPolicy,
	}
}

// syncPoliciesLocked writes j's policies after a change of the job at
// s.index: a new one is created, a changed one gets a new ModifyIndex, one
// whose group lost its scaling block (or the group itself) is deleted;
// each of these moves the table's index.
func (s *Server) syncPoliciesLocked(j *job) {
	live := map[string]bool{}
	for _, g := range j.groups {
		if !g.conf.Scaling {
			// Deleted: a block added again is a new policy (Nomad takes
			// IDs only from the job's current policies).
			g.policy, g.scalingID = nil, ""
			continue
		}
		live[g.scalingID] = true
		c := policyOf(j, g)
		switch {
		case g.policy == nil:
			g.policy = &policyState{id: g.scalingID, content: c, createIndex: s.index, modifyIndex: s.index}
			s.policiesIndex = s.index
		case !reflect.DeepEqual(g.policy.content, c):
			g.policy.content, g.policy.modifyIndex = c, s.index
			s.policiesIndex = s.index
		}
	}
	for _, g := range j.retired {
		g.policy, g.scalingID = nil, ""
	}
	for id := range j.policyIDs {
		if !live[id] {
			s.policiesIndex = s.index
		}
	}
	j.policyIDs = live
}

// dropPoliciesLocked deletes a purged job's policies.
func (s *Server) dropPoliciesLocked(j *job) {
	if len(j.policyIDs) > 0 {
		s.policiesIndex = s.index
	}
	j.policyIDs = nil
}

// apiPolicy is g's policy as GET /v1/scaling/policy/:id answers it.
func apiPolicy(j *job, g *group) *api.ScalingPolicy {
	p := g.policy
	return &api.ScalingPolicy{
		ID: p.id, Namespace: j.namespace, Type: p.content.Type,
		Target: map[string]string{"Namespace": j.namespace, "Job": j.id, "Group": g.name},
		Min:    p.content.Min, Max: p.content.Max, Enabled: new(p.content.Enabled),
		Policy:      p.content.Body,
		CreateIndex: p.createIndex, ModifyIndex: p.modifyIndex,
	}
}

// listPolicies serves GET /v1/scaling/policies as Nomad's
// Scaling.ListPolicies: ?prefix= (an ID prefix; job and type are then
// ignored), else ?job= (that job's, the type matched exactly), else the
// namespace's (the type matched as a prefix); namespace "*" lists every
// namespace and ignores job. Ordered by ID for a prefix or "*", else by
// target (namespace, job, group). The index is the table's.
func (s *Server) listPolicies(w http.ResponseWriter, r *http.Request, stop chan struct{}, ns string) {
	q := r.URL.Query()
	prefix, jobID, typ := q.Get("prefix"), q.Get("job"), q.Get("type")
	s.blocking(w, r, stop, func() (uint64, any, error) {
		type row struct {
			stub       *api.ScalingPolicyListStub
			ns, job, g string
		}
		var rows []row
		for _, j := range s.jobs {
			if ns != "*" && j.namespace != ns {
				continue
			}
			for _, g := range j.groups {
				p := g.policy
				if p == nil {
					continue
				}
				switch {
				case prefix != "":
					if !strings.HasPrefix(p.id, prefix) {
						continue
					}
				case jobID != "" && ns != "*":
					if j.id != jobID || (typ != "" && p.content.Type != typ) {
						continue
					}
				case !strings.HasPrefix(p.content.Type, typ):
					continue
				}
				ap := apiPolicy(j, g)
				rows = append(rows, row{ns: j.namespace, job: j.id, g: g.name, stub: &api.ScalingPolicyListStub{
					ID: ap.ID, Enabled: *ap.Enabled, Type: ap.Type, Target: ap.Target,
					CreateIndex: ap.CreateIndex, ModifyIndex: ap.ModifyIndex,
				}})
			}
		}
		byID := prefix != "" || ns == "*"
		slices.SortFunc(rows, func(x, y row) int {
			if byID {
				return strings.Compare(x.stub.ID, y.stub.ID)
			}
			return cmp.Or(strings.Compare(x.ns, y.ns), strings.Compare(x.job, y.job), strings.Compare(x.g, y.g), strings.Compare(x.stub.ID, y.stub.ID))
		})
		out := make([]*api.ScalingPolicyListStub, 0, len(rows))
		for _, rw := range rows {
			out = append(out, rw.stub)
		}
		return s.policiesIndex, out, nil
	})
}

// policyInfo serves GET /v1/scaling/policy/:id as Nomad's
// Scaling.GetPolicy: the policy at its own ModifyIndex, or 404 "policy not
// found" at the table's index (answered at once, where Nomad's blocking
// read would wait for the table to change). Nomad does not check the
// policy's namespace against the request's there, and neither does this.
func (s *Server) policyInfo(w http.ResponseWriter, r *http.Request, stop chan struct{}, id string) {
	s.blocking(w, r, stop, func() (uint64, any, error) {
		for _, j := range s.jobs {
			for _, g := range j.groups {
				if g.policy != nil && g.policy.id == id {
					return g.policy.modifyIndex, apiPolicy(j, g), nil
				}
			}
		}
		return s.policiesIndex, nil, errorf(http.StatusNotFound, "policy not found")
	})
}
