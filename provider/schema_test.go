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

// checkSchemaDescriptions walks a data source schema: the schema, every
// attribute and every block has a MarkdownDescription (what tfplugindocs
// renders), and none is named `count` (reserved by Terraform).
func checkSchemaDescriptions(t *testing.T, s schema.Schema) {
	t.Helper()
	if s.MarkdownDescription == "" {
		t.Error("schema has no MarkdownDescription")
	}
	walkAttributes(t, "", s.Attributes)
	for name, b := range s.Blocks {
		if b.GetMarkdownDescription() == "" {
			t.Errorf("block %s: no MarkdownDescription", name)
		}
		if nb, ok := b.(schema.SingleNestedBlock); ok {
			walkAttributes(t, name+".", nb.Attributes)
		} else {
			t.Errorf("block %s: kind %T not covered by this check", name, b)
		}
	}
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
		switch v := a.(type) {
		case schema.SingleNestedAttribute:
			walkAttributes(t, p+".", v.Attributes)
		case schema.ListNestedAttribute:
			walkAttributes(t, p+"[*].", v.NestedObject.Attributes)
		}
	}
}
