package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/strictjson"
)

// maxRequestBytes bounds what explain reads.
const maxRequestBytes = 64 << 20

var explainHelp = help{
	synopsis: "--request FILE [--format text|json]",
	description: `Decide one engine request (the two hosts' observations, optional model
sources and quotas, as engine.Request's JSON) and explain the decision: the
two container counts, the activated branches, what bound each count and how
the scheduler can place it. Each host's cpu_capacity_mhz, usage_samples
(each sample's time and cpu_mhz), requested_cpu_mhz, running_replicas and
replica_cpu_demand_mhz are required (0 where 0 is meant: nothing is read as
0 for being left out), and no field may be null. A quota's unset fields
take the engine's defaults (min 0, max the model's slots, per_branch 1,
rounding nearest), as in every front end. A model file the request names
(first_model, second_model) is read relative to the working directory, not
to the request file's.`,
	examples: []string{
		"# the sample request in the repository",
		"activation explain --request examples/cli/request.json",
		"# the decision as JSON, the request from stdin",
		"activation explain --request - --format json < request.json",
	},
}

func cmdExplain(args []string, e env) error {
	fs := newFlags("explain", explainHelp)
	path := fs.String("request", "", "engine request JSON `FILE`, or - for stdin (required)")
	format := fs.String("format", "text", "output: text (the explanation) or json (the decision)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return usagef("--request: required: a request JSON file or - for stdin")
	}
	if *format != "text" && *format != "json" {
		return usagef("--format: %q; want text or json", *format)
	}
	var r io.Reader
	name := *path
	if *path == "-" {
		r, name = e.stdin, "stdin"
	} else {
		f, err := os.Open(*path)
		if err != nil {
			return fmt.Errorf("--request: %w", err)
		}
		defer f.Close()
		r = f
	}
	req, err := readRequest(r)
	if err != nil {
		return fmt.Errorf("request %s: %w", name, err)
	}
	dec, err := req.Decide()
	// A margin out of range is refused wherever it is given, as the data
	// source and the strategy refuse it, even when both hosts have their
	// own (the engine checks only the margins it decides at).
	badMargin := engine.MarginReason(req.Margin)
	if err != nil || badMargin != "" {
		// One line per wrong input. min_samples, hold_band and margin are the
		// request's, for both hosts: the engine checks them per host, and
		// the line names the first host it found them on, once. A host's
		// own first_margin or second_margin is that host's alone.
		var lines []string
		shared := map[string]bool{}
		if badMargin != "" {
			shared["margin"] = true
			lines = append(lines, fmt.Sprintf("field margin (%s): %s", sharedBy(req, "margin"), badMargin))
		}
		for _, err := range engine.Problems(err) {
			var oe *engine.ObservationError
			if errors.As(err, &oe) && oe.Field == "margin" && ownMargin(req, oe.Host) {
				lines = append(lines, fmt.Sprintf("field %s_margin: %s", oe.Host, oe.Reason))
				continue
			}
			if errors.As(err, &oe) && (oe.Field == "min_samples" || oe.Field == "hold_band" || oe.Field == "margin") {
				if !shared[oe.Field] {
					shared[oe.Field] = true
					lines = append(lines, fmt.Sprintf("field %s (%s): %s (found deciding the %s host)", oe.Field, sharedBy(req, oe.Field), oe.Reason, oe.Host))
				}
				continue
			}
			lines = append(lines, err.Error())
		}
		return fmt.Errorf("request %s: %s", name, strings.Join(lines, "\n"))
	}
	if *format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(dec)
	}
	_, err = io.WriteString(e.stdout, dec.Explain())
	return err
}

// sharedBy says which hosts decide at the request's field: both, but for
// margin when one host has its own.
func sharedBy(req *engine.Request, field string) string {
	if field == "margin" {
		switch {
		case ownMargin(req, engine.RoleFirst) && ownMargin(req, engine.RoleSecond):
			return "for neither host: each has its own"
		case ownMargin(req, engine.RoleFirst):
			return "for the second host"
		case ownMargin(req, engine.RoleSecond):
			return "for the first host"
		}
	}
	return "for both hosts"
}

// ownMargin reports whether the request gives host (engine.RoleFirst or
// engine.RoleSecond) a margin of its own.
func ownMargin(req *engine.Request, host string) bool {
	if host == engine.RoleFirst {
		return req.FirstMargin != nil
	}
	return host == engine.RoleSecond && req.SecondMargin != nil
}

// readRequest decodes one engine request. Unknown fields, wrong types,
// trailing data and an empty document are errors that name the field.
func readRequest(r io.Reader) (*engine.Request, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxRequestBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxRequestBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxRequestBytes)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark, as editors may write
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("empty: want a JSON object with \"first\" and \"second\" observations")
	}
	if trimmed[0] != '{' {
		return nil, errors.New("not a JSON object: want one with \"first\" and \"second\" observations")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var req engine.Request
	if err := dec.Decode(&req); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("not valid JSON at byte %d: %v", se.Offset, se)
		}
		// An unknown field or a value of the wrong type: the decoder
		// names the key, the walk where it is
		// ("field first.usage_samples[3].cpu_mhz").
		if perr := strictjson.CheckComplete(data, &req); perr != nil {
			return nil, fmt.Errorf("not a valid request: %w", perr)
		}
		if errors.As(err, &te) {
			return nil, fmt.Errorf("field %s: %s is not a valid %s", te.Field, te.Value, te.Type)
		}
		return nil, fmt.Errorf("not a valid request: %w", err)
	}
	// Anything but white space after the object is refused (More does
	// not see a stray "]" or "}").
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the request object")
	}
	// Every name exact and given once, at every level (Go's decoder takes
	// "FIRST" for "first" and "MAX" for "max", and the last of two keys),
	// and nothing Go's decoder would read as zero without a word: a
	// required field left out (a host left out, a sample without cpu_mhz,
	// which is not an idle one) or a null.
	if err := strictjson.CheckComplete(data, &req); err != nil {
		return nil, fmt.Errorf("not a valid request: %w", err)
	}
	// An empty model source given is a template's unset variable more
	// likely than a choice: left out, a host takes its built-in model;
	// given, it must name one (as the provider, simulate and the
	// strategy refuse an empty one).
	var sources map[string]json.RawMessage
	if err := json.Unmarshal(data, &sources); err == nil {
		for _, k := range []string{"first_model", "second_model"} {
			if v, ok := sources[k]; ok && strings.TrimSpace(string(v)) == `""` {
				return nil, fmt.Errorf("field %s: empty: name a model (\"builtin:<name>\" or a file path), or leave the field out for the host's built-in model", k)
			}
		}
	}
	return &req, nil
}
