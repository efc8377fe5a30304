package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
	"github.com/activation-scheduler/terraform-provider-activation/nomadusage"
)

// wholeBetween accepts a whole number from min to max: for the data
// sources' own settings (how many reads, how far apart), which are rules of
// the provider, not of the engine. Values of any size reach it (the
// attributes are numbers), so 1e30 or 1/0 are named, not a framework
// conversion error.
type wholeBetween struct{ min, max int64 }

func (v wholeBetween) Description(context.Context) string {
	return fmt.Sprintf("value must be a whole number from %d to %d", v.min, v.max)
}

func (v wholeBetween) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v wholeBetween) ValidateNumber(_ context.Context, req validator.NumberRequest, resp *validator.NumberResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if i, why := whole(req.ConfigValue); why != "" || i < v.min || i > v.max {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid attribute value", attributeDetail(req.Path,
			fmt.Sprintf("is %s; it must be a whole number from %d to %d", req.ConfigValue.ValueBigFloat().Text('g', 10), v.min, v.max)))
	}
}

// duration accepts a Go duration >= 0 ("90s", "2m", "0s").
type duration struct{}

// durationValidator checks that a string is a Go duration >= 0.
func durationValidator() validator.String { return duration{} }

func (duration) Description(context.Context) string {
	return `value must be a Go duration >= 0, such as "90s" or "2m"`
}

func (v duration) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (duration) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if d, err := time.ParseDuration(req.ConfigValue.ValueString()); err != nil || d < 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration", attributeDetail(req.Path,
			fmt.Sprintf("is %q; it must be a Go duration >= 0, such as \"90s\" or \"2m\"", req.ConfigValue.ValueString())))
	}
}

// modelSource accepts "builtin:<name>" naming a built-in model, or a
// non-empty file path. Whether the file exists and holds a valid model is
// checked when the data source is read, so a file written during apply works.
type modelSource struct{}

func (modelSource) Description(context.Context) string {
	return fmt.Sprintf("value must be %s<name> naming a built-in model (%s) or the path of a model file",
		engine.BuiltinPrefix, strings.Join(engine.BuiltinNames(), ", "))
}

func (v modelSource) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (modelSource) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s := req.ConfigValue.ValueString()
	name, builtin := strings.CutPrefix(s, engine.BuiltinPrefix)
	if !builtin {
		if strings.TrimSpace(s) == "" {
			resp.Diagnostics.AddAttributeError(req.Path, "Invalid model source",
				fmt.Sprintf("Attribute %s is empty: want %s<name> or the path of a model file.", req.Path, engine.BuiltinPrefix))
		}
		return
	}
	names := engine.BuiltinNames()
	for _, n := range names {
		if n == name {
			return
		}
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Unknown built-in model",
		fmt.Sprintf("Attribute %s names built-in model %q, which does not exist; the built-in models are: %s.",
			req.Path, name, strings.Join(names, ", ")))
}

func modelSourceValidators() []validator.String {
	// modelSource says what an empty value is; the length check only
	// bounds a long one (LengthBetween(1, ...) would report "" twice).
	return []validator.String{stringvalidator.LengthAtMost(4096), modelSource{}}
}

// urlString accepts an http, https or unix URL with a host (or a socket
// path), as the Nomad API client does.
type urlString struct{}

// urlValidator checks that a string is a URL the Nomad API client accepts.
func urlValidator() validator.String { return urlString{} }

func (urlString) Description(context.Context) string {
	return "value must be an http://, https:// or unix:// URL"
}

func (v urlString) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (urlString) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := nomadconn.CheckAddress(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid URL", fmt.Sprintf("Attribute %s: %v.", req.Path, err))
	}
}

// tokenString accepts an ACL token: not empty (an empty variable would
// otherwise send no token, or read as NOMAD_TOKEN's absence), at most
// 1024 bytes.
type tokenString struct{}

func (tokenString) Description(context.Context) string {
	return "value must be a token of 1 to 1024 bytes; leave the attribute unset for none"
}

func (v tokenString) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (tokenString) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	switch n := len(req.ConfigValue.ValueString()); {
	case n == 0:
		resp.Diagnostics.AddAttributeError(req.Path, "Empty token",
			fmt.Sprintf("Attribute %s is empty (an unset variable?): leave it unset (null) to send no token, or to take NOMAD_TOKEN.", req.Path))
	case n > 1024:
		resp.Diagnostics.AddAttributeError(req.Path, "Token too long",
			fmt.Sprintf("Attribute %s is %d bytes long; a Nomad ACL token's secret ID is 36 (at most 1024 are accepted).", req.Path, n))
	}
}

// headerMap accepts the nomad block's headers: each name an HTTP token
// and each value free of control characters (nomadconn.CheckHeader), every
// bad header reported at validate, on its own key; a value is a secret
// and never shown.
type headerMap struct{}

func (headerMap) Description(context.Context) string {
	return "each name must be an HTTP header name (letters, digits and !#$%&'*+-.^_`|~), and each value free of control characters other than a tab"
}

func (v headerMap) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (headerMap) ValidateMap(_ context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	elems := req.ConfigValue.Elements()
	names := slices.Sorted(maps.Keys(elems))
	for _, name := range names {
		value := ""
		if sv, ok := elems[name].(types.String); ok && !sv.IsNull() && !sv.IsUnknown() {
			value = sv.ValueString()
		}
		if err := nomadconn.CheckHeader(name, value); err != nil {
			p := req.Path.AtMapKey(name)
			resp.Diagnostics.AddAttributeError(p, "Invalid header", fmt.Sprintf("Attribute %s: %v.", p, err))
		}
	}
}

// pemString accepts text holding at least one PEM block.
type pemString struct{}

// pemValidator checks that a string holds PEM text.
func pemValidator() validator.String { return pemString{} }

func (pemString) Description(context.Context) string {
	return "value must be PEM text (-----BEGIN ...-----)"
}

func (v pemString) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (pemString) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if !strings.Contains(req.ConfigValue.ValueString(), "-----BEGIN ") {
		resp.Diagnostics.AddAttributeError(req.Path, "Not PEM",
			fmt.Sprintf("Attribute %s does not hold PEM text: expected a -----BEGIN ...----- block (to pass a file, use the *_file attribute).", req.Path))
	}
}

// nodeID accepts a Nomad node ID by nomadusage.CheckNodeID's rule (the API
// client puts it into a request's path as it is).
type nodeID struct{}

func (nodeID) Description(context.Context) string {
	return "value must be a Nomad node ID, a UUID (hexadecimal digits and dashes)"
}

func (v nodeID) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (nodeID) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if nomadusage.CheckNodeID(req.ConfigValue.ValueString()) != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Attribute Value",
			fmt.Sprintf("Attribute %s must be a Nomad node ID, a UUID (hexadecimal digits and dashes), got: %q", req.Path, req.ConfigValue.ValueString()))
	}
}
