package provider

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// float64GreaterThan accepts finite numbers strictly above min (the
// framework's validators only offer inclusive bounds).
type float64GreaterThan struct{ min float64 }

func greaterThan(min float64) validator.Float64 { return float64GreaterThan{min: min} }

func (v float64GreaterThan) Description(context.Context) string {
	return fmt.Sprintf("value must be a finite number greater than %v", v.min)
}

func (v float64GreaterThan) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (v float64GreaterThan) ValidateFloat64(ctx context.Context, req validator.Float64Request, resp *validator.Float64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	x := req.ConfigValue.ValueFloat64()
	if math.IsNaN(x) || math.IsInf(x, 0) || x <= v.min {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid attribute value",
			fmt.Sprintf("Attribute %s is %v; it must be a finite number greater than %v.", req.Path, x, v.min))
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
	return []validator.String{stringvalidator.LengthBetween(1, 4096), modelSource{}}
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
	s := req.ConfigValue.ValueString()
	u, err := url.Parse(s)
	switch {
	case err != nil:
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid URL", fmt.Sprintf("Attribute %s: %q is not a URL: %v.", req.Path, s, err))
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "unix":
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid URL",
			fmt.Sprintf("Attribute %s: %q has scheme %q; want http, https or unix.", req.Path, s, u.Scheme))
	case u.Scheme != "unix" && u.Host == "":
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid URL", fmt.Sprintf("Attribute %s: %q has no host.", req.Path, s))
	case u.Scheme == "unix" && u.Path == "" && u.Host == "":
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid URL", fmt.Sprintf("Attribute %s: %q has no socket path.", req.Path, s))
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
