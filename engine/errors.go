package engine

import (
	"errors"
	"fmt"
)

// The engine is the one rule book: every range and consistency rule on an
// observation, a quota or a model source is checked here, and a front end
// maps the typed error below to its own attribute or configuration key by
// Host and Field, never by the message text.

// ObservationError names the field of an observation that is wrong and why.
// Field is a path in the observation's JSON names, such as
// "usage_samples[3].cpu_mhz" or "queued_replicas[0].memory_mb".
type ObservationError struct {
	Host   string // "first" or "second" (or the caller's label)
	Field  string
	Reason string
	// Err, when set, is a sentinel the error wraps (ErrTooFewSamples).
	Err error
}

func (e *ObservationError) Error() string {
	return fmt.Sprintf("%s host observation: %s: %s", e.Host, e.Field, e.Reason)
}

// Unwrap returns the sentinel, if any.
func (e *ObservationError) Unwrap() error { return e.Err }

// ErrTooFewSamples: the usage window holds fewer samples than the minimum a
// decision needs. Nothing is decided; a controller keeps its current count.
var ErrTooFewSamples = errors.New("too few usage samples to judge")

func obsErr(host, field, format string, args ...any) error {
	return &ObservationError{Host: host, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// QuotaError names the quota field that is wrong and why.
type QuotaError struct {
	Host   string
	Field  string
	Reason string
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("%s host quota: %s: %s", e.Host, e.Field, e.Reason)
}

// ModelSourceError says why a host's model cannot be used: the source does
// not load (Err wraps the *ModelError or the file system error), or the
// model cannot serve the host's role.
type ModelSourceError struct {
	Host   string
	Source string
	Err    error
}

func (e *ModelSourceError) Error() string {
	if e.Source == "" {
		return fmt.Sprintf("%s host model: %v", e.Host, e.Err)
	}
	// The source is named once: not again by the file's load error, and
	// a field of the model file without the "model: " of a model error
	// read alone.
	if le, ok := e.Err.(*loadError); ok && le.source == e.Source {
		return fmt.Sprintf("%s host model %s: %s", e.Host, e.Source, le.cause())
	}
	if me, ok := e.Err.(*ModelError); ok {
		return fmt.Sprintf("%s host model %s: %s", e.Host, e.Source, me.fieldReason())
	}
	return fmt.Sprintf("%s host model %s: %v", e.Host, e.Source, e.Err)
}

// Unwrap returns the cause.
func (e *ModelSourceError) Unwrap() error { return e.Err }

// Errors splits an error of Decide into the errors it holds, one per host
// whose input is wrong, the first host's first: a slice of err alone when
// it holds one (nil for nil). A host's error may itself hold several
// problems (Validate): a caller that maps errors to its own fields
// (FieldOf, Reason) reads Problems instead: on a joined error those find
// only the first typed error they reach.
func Errors(err error) []error {
	if err == nil {
		return nil
	}
	if h, ok := err.(*hostErrors); ok {
		return h.errs
	}
	return []error{err}
}

// hostErrors is Decide's error when both hosts' inputs are wrong: one
// error per host (each may hold several problems), the first host's
// first. It reads as errors.Join's.
type hostErrors struct{ errs []error }

func (e *hostErrors) Error() string   { return errors.Join(e.errs...).Error() }
func (e *hostErrors) Unwrap() []error { return e.errs }

// Problems splits an error of Decide or Validate into every problem it
// holds, the first host's first, each naming its field where it names an
// input (FieldOf): Errors' errors, each split again where a host's input
// has several problems (nil for nil).
func Problems(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, Problems(e)...)
	}
	return out
}

// FieldOf returns the host role, the part of the host's input ("observation",
// "quota" or "model") and the field path an engine error is about; ok is
// false for an error that names no input.
func FieldOf(err error) (host, part, field string, ok bool) {
	var oe *ObservationError
	if errors.As(err, &oe) {
		return oe.Host, PartObservation, oe.Field, true
	}
	var qe *QuotaError
	if errors.As(err, &qe) {
		return qe.Host, PartQuota, qe.Field, true
	}
	var me *ModelSourceError
	if errors.As(err, &me) {
		return me.Host, PartModel, "", true
	}
	return "", "", "", false
}

// Parts of a host's input, as FieldOf names them.
const (
	PartObservation = "observation"
	PartQuota       = "quota"
	PartModel       = "model"
)

// Reason returns the part of an engine error a person needs beside the
// field: the reason without the host and field prefix.
func Reason(err error) string {
	var oe *ObservationError
	if errors.As(err, &oe) {
		return oe.Reason
	}
	var qe *QuotaError
	if errors.As(err, &qe) {
		return qe.Reason
	}
	var me *ModelSourceError
	if errors.As(err, &me) {
		return me.Err.Error()
	}
	return err.Error()
}
