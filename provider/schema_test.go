package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
)

// dataSourceSchema returns ds's schema, failing on diagnostics.
func dataSourceSchema(t testing.TB, ds datasource.DataSource) schema.Schema {
	t.Helper()
	var resp datasource.SchemaResponse
	ds.Schema(context.Background(), datasource.SchemaRequest{}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatalf("schema: %v", resp.Diagnostics)
	}
	return resp.Schema
}

// checkSchemaDescriptions walks a data source schema: every attribute has a
// MarkdownDescription, none is named `count`, and every attribute a user
// sets (required or optional) has at least one validator.
func checkSchemaDescriptions(t *testing.T, s schema.Schema) {
	t.Helper()
	if s.MarkdownDescription == "" {
		t.Error("schema has no MarkdownDescription")
	}
	walkAttributes(t, "", s.Attributes)
}

func walkAttributes(t *testing.T, prefix string, attrs map[string]schema.Attribute) {
	t.Helper()
	for name, a := range attrs {
		p := prefix + name
		if name == "count" {
			t.Errorf("%s: `count` is reserved by Terraform", p)
		}
		if a.GetMarkdownDescription() == "" {
			t.Errorf("%s: no MarkdownDescription", p)
		}
		input := a.IsRequired() || a.IsOptional()
		var validators int
		switch v := a.(type) {
		case schema.StringAttribute:
			validators = len(v.Validators)
		case schema.Float64Attribute:
			validators = len(v.Validators)
		case schema.Int64Attribute:
			validators = len(v.Validators)
		case schema.BoolAttribute:
			validators = len(v.Validators)
		case schema.ListAttribute:
			validators = len(v.Validators)
		case schema.MapAttribute:
			validators = len(v.Validators)
		case schema.SingleNestedAttribute:
			validators = -1 // its attributes carry the validators
			walkAttributes(t, p+".", v.Attributes)
		case schema.ListNestedAttribute:
			validators = len(v.Validators)
			walkAttributes(t, p+"[*].", v.NestedObject.Attributes)
		default:
			t.Errorf("%s: attribute kind %T not covered by this check", p, a)
		}
		if input && validators == 0 {
			t.Errorf("%s: a configurable attribute without validators", p)
		}
	}
}
