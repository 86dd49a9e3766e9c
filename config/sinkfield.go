package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// FieldError is a sink setting's error found after decoding (a range check): Field is the
// setting's path inside the sink's declaration, e.g. "outbox.max_age". Sink.Locate turns it
// into the configuration file's path and line.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// Locate returns err naming the field's full path and the file's line and column when err
// holds a *FieldError and the declaration came from a file, e.g. "sink mqtt:
// output.sinks[1].outbox.max_age (line 11, column 18): must not be negative"; else err.
func (s Sink) Locate(err error) error {
	var fe *FieldError
	if err == nil || !errors.As(err, &fe) {
		return err
	}
	path := strings.Split(fe.Field, ".")
	if n := s.find(s.fields, path); n != nil && n.Value != nil {
		at := n.Value.GetToken().Position
		return fmt.Errorf("sink %s: %s (line %d, column %d): %w", s.Type, s.path(fe.Field), at.Line, at.Column, fe.Err)
	}
	return fmt.Errorf("sink %s: %s: %w", s.Type, s.path(fe.Field), fe.Err)
}

// find returns the entry at path among fields (nested mappings), or nil.
func (s Sink) find(fields []*ast.MappingValueNode, path []string) *ast.MappingValueNode {
	for _, f := range fields {
		if f.Key == nil || f.Key.GetToken().Value != path[0] {
			continue
		}
		if len(path) == 1 {
			return f
		}
		if m, ok := f.Value.(*ast.MappingNode); ok {
			return s.find(m.Values, path[1:])
		}
		if m, ok := f.Value.(*ast.MappingValueNode); ok {
			return s.find([]*ast.MappingValueNode{m}, path[1:])
		}
	}
	return nil
}

// leafError finds, among the declaration's entries, the first nested setting that fails to
// decode alone into a fresh value of v's type: its path below the sink, its value's position
// and the error. ok is false when no single setting fails (the error needs several).
func (s Sink) leafError(kept []*ast.MappingValueNode, v any) (field string, at *token.Position, err error, ok bool) {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return "", nil, nil, false
	}
	var walk func(prefix []*ast.MappingValueNode, fields []*ast.MappingValueNode) bool
	walk = func(prefix []*ast.MappingValueNode, fields []*ast.MappingValueNode) bool {
		for _, f := range fields {
			if f.Key == nil {
				continue
			}
			chain := append(append([]*ast.MappingValueNode(nil), prefix...), f)
			var children []*ast.MappingValueNode
			switch n := f.Value.(type) {
			case *ast.MappingNode:
				children = n.Values
			case *ast.MappingValueNode:
				children = []*ast.MappingValueNode{n}
			}
			if len(children) > 0 {
				if walk(chain, children) {
					return true
				}
				continue
			}
			e := yaml.NodeToValue(nest(chain), reflect.New(t.Elem()).Interface(), yaml.Strict())
			if e == nil {
				continue
			}
			names := make([]string, len(chain))
			for i, c := range chain {
				names[i] = c.Key.GetToken().Value
			}
			field, err, ok = strings.Join(names, "."), e, true
			var ye yaml.Error
			if errors.As(e, &ye) && ye.GetToken() != nil {
				at, err = ye.GetToken().Position, errors.New(ye.GetMessage())
			} else if f.Value != nil {
				at = f.Value.GetToken().Position
			}
			return true
		}
		return false
	}
	walk(nil, kept)
	return field, at, err, ok
}

// nest builds the mapping {chain[0]: {chain[1]: … chain[n-1]}} holding only the last entry.
func nest(chain []*ast.MappingValueNode) *ast.MappingNode {
	var node ast.Node = chain[len(chain)-1]
	for i := len(chain) - 1; i >= 0; i-- {
		m := chain[i]
		if i < len(chain)-1 {
			inner := ast.Mapping(node.GetToken(), false, node.(*ast.MappingValueNode))
			mv := ast.MappingValue(m.GetToken(), m.Key, inner)
			node = mv
		}
	}
	return ast.Mapping(chain[0].GetToken(), false, node.(*ast.MappingValueNode))
}
