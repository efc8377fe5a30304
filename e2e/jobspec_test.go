package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Nomad's jobspec parser is not obtainable here (the nomad module is not
// open source from v1.7 on), so the tests read a jobspec's scaling block
// with this small decoder instead, and check it against what Nomad itself
// made of the nomad-autoscaler's test fixtures (TestJobspecScalingDecoder).

// jobspecScaling is a group's scaling block as Nomad's API carries it.
type jobspecScaling struct {
	Min, Max *int64
	Enabled  *bool
	// Policy is the policy block as Nomad's jobspec parser decodes it:
	// attributes as values (numbers as float64), each block as one element
	// of a list under its type, {label: [body]} for a labelled one; nil
	// without a policy block.
	Policy map[string]any
}

// readJobspecScaling reads the scaling block of group in the jobspec at
// path; nil when the group has none.
func readJobspecScaling(path, group string) (*jobspecScaling, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	var groupBody *hclsyntax.Body
	for _, jb := range f.Body.(*hclsyntax.Body).Blocks {
		if jb.Type != "job" {
			continue
		}
		for _, gb := range jb.Body.Blocks {
			if gb.Type == "group" && len(gb.Labels) == 1 && gb.Labels[0] == group {
				groupBody = gb.Body
			}
		}
	}
	if groupBody == nil {
		return nil, fmt.Errorf("%s: no group %q in a job block", path, group)
	}
	for _, sb := range groupBody.Blocks {
		if sb.Type != "scaling" {
			continue
		}
		out := &jobspecScaling{}
		for name, attr := range sb.Body.Attributes {
			v, err := attrValue(attr)
			if err != nil {
				return nil, err
			}
			switch name {
			case "min", "max":
				n, ok := v.(float64)
				if !ok {
					return nil, fmt.Errorf("%s: scaling.%s is %T, want a number", path, name, v)
				}
				i := int64(n)
				if name == "min" {
					out.Min = &i
				} else {
					out.Max = &i
				}
			case "enabled":
				b, ok := v.(bool)
				if !ok {
					return nil, fmt.Errorf("%s: scaling.enabled is %T, want a bool", path, v)
				}
				out.Enabled = &b
			}
		}
		for _, pb := range sb.Body.Blocks {
			if pb.Type == "policy" {
				if out.Policy, err = decodeBody(pb.Body); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	}
	return nil, nil
}

// decodeBody decodes an HCL body as Nomad's jobspec parser decodes a
// scaling policy block.
func decodeBody(b *hclsyntax.Body) (map[string]any, error) {
	out := map[string]any{}
	for name, attr := range b.Attributes {
		v, err := attrValue(attr)
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	for _, blk := range b.Blocks {
		body, err := decodeBody(blk.Body)
		if err != nil {
			return nil, err
		}
		var item any = body
		for i := len(blk.Labels) - 1; i >= 0; i-- {
			item = map[string]any{blk.Labels[i]: []any{item}}
		}
		list, _ := out[blk.Type].([]any)
		out[blk.Type] = append(list, item)
	}
	return out, nil
}

func attrValue(a *hclsyntax.Attribute) (any, error) {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return nil, diags
	}
	return ctyToGo(v)
}

func ctyToGo(v cty.Value) (any, error) {
	if v.IsNull() {
		return nil, nil
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return v.AsString(), nil
	case t == cty.Number:
		f, _ := v.AsBigFloat().Float64() // as JSON carries it
		return f, nil
	case t == cty.Bool:
		return v.True(), nil
	case t.IsTupleType() || t.IsListType() || t.IsSetType():
		out := []any{}
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			g, err := ctyToGo(ev)
			if err != nil {
				return nil, err
			}
			out = append(out, g)
		}
		return out, nil
	case t.IsObjectType() || t.IsMapType():
		out := map[string]any{}
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			g, err := ctyToGo(ev)
			if err != nil {
				return nil, err
			}
			out[k.AsString()] = g
		}
		return out, nil
	}
	return nil, fmt.Errorf("a value of type %s", t.FriendlyName())
}

// TestJobspecScalingDecoder: on every test fixture of nomad-autoscaler
// v0.4.6's Nomad policy source (jobspecs that Nomad itself ran and
// inspected: `nomad run`, `nomad inspect`, their .json.golden), the
// decoder gives the scaling block Nomad kept: min, max, enabled and the
// policy body.
func TestJobspecScalingDecoder(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/hashicorp/nomad-autoscaler").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/hashicorp/nomad-autoscaler: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "policy", "nomad", "test-fixtures")
	srcs, err := filepath.Glob(filepath.Join(dir, "src", "*.hcl"))
	if err != nil || len(srcs) < 26 {
		t.Fatalf("the fixtures under %s: %d found (%v)", dir, len(srcs), err)
	}
	checked := 0
	for _, src := range srcs {
		name := strings.TrimSuffix(filepath.Base(src), ".hcl")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, name+".json.golden"))
			if err != nil {
				t.Fatal(err)
			}
			var golden struct {
				Job struct {
					TaskGroups []struct {
						Name    string
						Count   int64
						Scaling *struct {
							Min, Max *int64
							Enabled  *bool
							Policy   map[string]any
						}
					}
				}
			}
			if err := json.Unmarshal(raw, &golden); err != nil {
				t.Fatal(err)
			}
			tg := golden.Job.TaskGroups[0]
			got, err := readJobspecScaling(src, tg.Name)
			if err != nil {
				t.Fatal(err)
			}
			if tg.Scaling == nil {
				if got != nil {
					t.Fatalf("decoded %+v, Nomad kept no scaling block", got)
				}
				return
			}
			if got == nil {
				t.Fatal("decoded no scaling block; Nomad kept one")
			}
			// As the API carries it (JSON: numbers as float64).
			var policy map[string]any
			b, _ := json.Marshal(got.Policy)
			_ = json.Unmarshal(b, &policy)
			if !reflect.DeepEqual(policy, tg.Scaling.Policy) {
				t.Errorf("policy\n%v\nNomad kept\n%v", policy, tg.Scaling.Policy)
			}
			// Nomad sets an unset min to the group's count, and an unset
			// enabled to true: the decoder must have found every one
			// the jobspec sets.
			srcText, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if got.Min == nil {
				if regexp.MustCompile(`(?m)^\s*min\s*=`).Match(srcText) {
					t.Fatal("the jobspec sets min; the decoder found none")
				}
				got.Min = &tg.Count
			}
			if *got.Min != *tg.Scaling.Min || !reflect.DeepEqual(got.Max, tg.Scaling.Max) {
				t.Errorf("min %d max %v, Nomad kept %d %v", *got.Min, got.Max, *tg.Scaling.Min, tg.Scaling.Max)
			}
			enabled := got.Enabled == nil || *got.Enabled
			if enabled != *tg.Scaling.Enabled {
				t.Errorf("enabled %v (decoded %v), Nomad kept %v", enabled, got.Enabled, *tg.Scaling.Enabled)
			}
			checked++
		})
	}
	if checked < 25 {
		t.Errorf("%d fixtures with a scaling block checked, want the 25 of nomad-autoscaler v0.4.6", checked)
	}
}

// policyKeys is the strategy and target keys of the one check of a
// scaling policy, as the agent hands them to the plugins (text), keyed
// "strategy.<key>" and "target.<key>": from a policy file's scaling
// block (group "") or from a jobspec group's scaling block.
func policyKeys(t *testing.T, path, group string) map[string]string {
	t.Helper()
	var policy map[string]any
	if group != "" {
		sc, err := readJobspecScaling(path, group)
		if err != nil || sc == nil {
			t.Fatalf("%s, group %s: scaling block %v (%v)", path, group, sc, err)
		}
		policy = sc.Policy
	} else {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		for _, b := range f.Body.(*hclsyntax.Body).Blocks {
			for _, pb := range b.Body.Blocks {
				if b.Type == "scaling" && pb.Type == "policy" {
					if policy, err = decodeBody(pb.Body); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	// one labelled block: {label: [body]} in a list of one
	only := func(v any, what string) map[string]any {
		list, _ := v.([]any)
		if len(list) != 1 {
			t.Fatalf("%s: %d %s blocks, want 1", path, len(list), what)
		}
		for _, body := range list[0].(map[string]any) {
			return body.([]any)[0].(map[string]any)
		}
		return nil
	}
	out := map[string]string{}
	check := only(policy["check"], "check")
	for k, v := range only(check["strategy"], "strategy") {
		out["strategy."+k] = fmt.Sprint(v)
	}
	for k, v := range only(policy["target"], "target") {
		out["target."+k] = fmt.Sprint(v)
	}
	for _, k := range []string{"evaluation_interval", "cooldown"} {
		out[k] = fmt.Sprint(policy[k])
	}
	return out
}
