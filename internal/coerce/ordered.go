package coerce

import (
	"bytes"
	"encoding/json"
)

// Ordered is a schema's properties in the order they were declared (a
// user tool's file order): its JSON keeps that order, where a map's is
// alphabetical, so the model reads the parameters as the file lists them.
type Ordered struct {
	Keys   []string
	Values map[string]any
}

// MarshalJSON writes the properties in declared order.
func (o Ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.Keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		vb, err := json.Marshal(o.Values[k])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Props is a schema's properties, as a map whichever form they take (nil
// when there are none).
func Props(schema map[string]any) map[string]any {
	switch p := schema["properties"].(type) {
	case map[string]any:
		return p
	case Ordered:
		return p.Values
	}
	return nil
}

// PropOrder is the order of a schema's properties: as declared where the
// schema keeps it, else nil (the caller chooses).
func PropOrder(schema map[string]any) []string {
	if o, ok := schema["properties"].(Ordered); ok {
		return o.Keys
	}
	return nil
}
