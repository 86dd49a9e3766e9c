package api

import (
	"embed"
	"io/fs"
	"net/http"
)

// webFS holds the web page: plain HTML, CSS and JavaScript, no build step.
//
//go:embed web
var webFS embed.FS

// webHandler serves the page at / and its assets beside it. The page holds no secrets: when a
// token is set it asks for it and sends it with its API requests.
func webHandler() http.Handler {
	sub, err := fs.Sub(webFS, "web")
	if err != nil {
		panic(err) // the embedded tree always has web/
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		files.ServeHTTP(w, r)
	})
}
