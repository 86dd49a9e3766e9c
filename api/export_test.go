package api

// Routed lists the patterns s registered behind the token check (valid after Start).
func Routed(s *Server) []string { return s.routed }

// RouteScopes is routeAccess as method → scope name, by pattern.
func RouteScopes() map[string]map[string]string {
	out := map[string]map[string]string{}
	for p, m := range routeAccess {
		out[p] = map[string]string{}
		for method, a := range m {
			out[p][method] = a.scope.String()
		}
	}
	return out
}
