// render: a small stand-in for `helm template`, so that the chart in
// deploy/helm/keda-gpu-scaler can be rendered and checked offline without the
// helm binary. It implements the part of Helm the chart uses, and fails loudly
// on anything else (an unknown function is a parse error of text/template).
//
//	render [--release NAME] [--namespace NS] [-f values.yaml]... [--set k.e.y=v]...
//	       [--set-string k=v]... [--api-versions GROUP/VERSION]... [--notes] CHARTDIR
//
// Output: every template under CHARTDIR/templates (sorted by name; `_*` files
// and NOTES.txt excluded; files that render to whitespace skipped) as a
// multi-document YAML stream, each document headed by `# Source: chart/templates/x`
// as helm does. With --notes it prints the rendered NOTES.txt instead.
//
// Helm semantics reproduced: .Values = values.yaml deep-merged with each -f
// file in order (a null removes a key), then --set (dotted keys, `\.` escapes a
// dot, true/false/null/integers typed, {a,b} lists); .Release.{Name,Namespace,
// Service,IsInstall,IsUpgrade,Revision}; .Chart.* from Chart.yaml with
// capitalised keys; .Template.{Name,BasePath}; .Capabilities.APIVersions.Has
// answering true for each --api-versions given (as `helm template
// --api-versions`: "cert-manager.io/v1", or "cert-manager.io/v1/Certificate",
// which also makes its group/version present); sprig's functions without
// env/expandenv; include, tpl, required, fail, toYaml, fromYaml, toJson,
// fromJson; missingkey=zero with "<no value>" removed. Not implemented
// (rejected at parse time): lookup, .Files, the rest of .Capabilities, subcharts.
//
// Built offline in GOPATH mode from Debian's golang-github-masterminds-sprig-dev
// and golang-gopkg-yaml.v3-dev (see CMakeLists.txt next to this directory).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	yaml2 "gopkg.in/yaml.v2"
	yaml "gopkg.in/yaml.v3"
)

type multiFlag []string

// apiVersions is .Capabilities.APIVersions: the API versions the render
// pretends the cluster serves.
type apiVersions []string

// Has reports whether v ("group/version" or "group/version/Kind") is served.
func (a apiVersions) Has(v string) bool {
	for _, x := range a {
		if x == v || strings.HasPrefix(x, v+"/") {
			return true
		}
	}
	return false
}

func (m *multiFlag) String() string { return strings.Join(*m, ",") }

func usage() {
	fmt.Fprintln(os.Stderr, "usage: render [--release NAME] [--namespace NS] [-f FILE]... [--set K=V]... [--set-string K=V]... [--api-versions G/V]... [--notes] CHARTDIR")
	os.Exit(2)
}

func main() {
	release, namespace := "keda-gpu-scaler", "default"
	var valueFiles, sets, setStrings, apis multiFlag
	notes := false
	chartDir := ""
	args := os.Args[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		val := func() string {
			if k := strings.IndexByte(a, '='); k >= 0 && strings.HasPrefix(a, "--") {
				return a[k+1:]
			}
			if i+1 >= len(args) {
				fmt.Fprintf(os.Stderr, "render: %s needs a value\n", a)
				os.Exit(2)
			}
			i++
			return args[i]
		}
		name := a
		if k := strings.IndexByte(a, '='); k >= 0 && strings.HasPrefix(a, "--") {
			name = a[:k]
		}
		switch name {
		case "--release":
			release = val()
		case "--namespace", "-n":
			namespace = val()
		case "-f", "--values":
			valueFiles = append(valueFiles, val())
		case "--set":
			sets = append(sets, val())
		case "--set-string":
			setStrings = append(setStrings, val())
		case "--api-versions":
			apis = append(apis, val())
		case "--notes":
			notes = true
		case "-h", "--help":
			usage()
		default:
			if strings.HasPrefix(a, "-") || chartDir != "" {
				fmt.Fprintf(os.Stderr, "render: unknown argument %q\n", a)
				usage()
			}
			chartDir = a
		}
	}
	if chartDir == "" {
		usage()
	}
	out, err := run(chartDir, release, namespace, valueFiles, sets, setStrings, apis, notes)
	if err != nil {
		fmt.Fprintf(os.Stderr, "render: %v\n", err)
		os.Exit(1)
	}
	os.Stdout.WriteString(out)
}

func run(chartDir, release, namespace string, valueFiles, sets, setStrings, apis []string, notes bool) (string, error) {
	chartMeta, err := readYAMLMap(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return "", err
	}
	chartName, _ := chartMeta["name"].(string)
	if chartName == "" {
		return "", fmt.Errorf("%s/Chart.yaml: no name", chartDir)
	}
	if _, err := os.Stat(filepath.Join(chartDir, "charts")); err == nil {
		return "", fmt.Errorf("%s/charts: subcharts are not supported by this harness", chartDir)
	}
	chart := map[string]interface{}{}
	for k, v := range chartMeta {
		chart[strings.ToUpper(k[:1])+k[1:]] = v
	}

	values, err := readYAMLMap(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return "", err
	}
	for _, f := range valueFiles {
		over, err := readYAMLMap(f)
		if err != nil {
			return "", err
		}
		values = mergeValues(values, over)
	}
	for _, s := range sets {
		if err := applySet(values, s, true); err != nil {
			return "", fmt.Errorf("--set %s: %v", s, err)
		}
	}
	for _, s := range setStrings {
		if err := applySet(values, s, false); err != nil {
			return "", fmt.Errorf("--set-string %s: %v", s, err)
		}
	}

	tdir := filepath.Join(chartDir, "templates")
	entries, err := os.ReadDir(tdir)
	if err != nil {
		return "", err
	}
	root := template.New("gotpl").Option("missingkey=zero")
	root.Funcs(funcMap(root))
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			return "", fmt.Errorf("%s/%s: template subdirectories are not supported by this harness", tdir, e.Name())
		}
		b, err := os.ReadFile(filepath.Join(tdir, e.Name()))
		if err != nil {
			return "", err
		}
		name := chartName + "/templates/" + e.Name()
		if _, err := root.New(name).Parse(string(b)); err != nil {
			return "", err
		}
		names = append(names, name)
	}
	sort.Strings(names)

	top := map[string]interface{}{
		"Values": values,
		"Chart":  chart,
		"Release": map[string]interface{}{
			"Name": release, "Namespace": namespace, "Service": "Helm",
			"IsInstall": true, "IsUpgrade": false, "Revision": 1,
		},
		"Capabilities": map[string]interface{}{"APIVersions": apiVersions(apis)},
	}
	render := func(name string) (string, error) {
		data := map[string]interface{}{}
		for k, v := range top {
			data[k] = v
		}
		data["Template"] = map[string]interface{}{"Name": name, "BasePath": chartName + "/templates"}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, name, data); err != nil {
			return "", err
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}

	var out strings.Builder
	for _, name := range names {
		base := filepath.Base(name)
		if strings.HasPrefix(base, "_") {
			continue
		}
		isNotes := base == "NOTES.txt"
		if isNotes != notes {
			continue
		}
		s, err := render(name)
		if err != nil {
			return "", err
		}
		if notes {
			out.WriteString(s)
			continue
		}
		if strings.TrimSpace(s) == "" {
			continue
		}
		fmt.Fprintf(&out, "---\n# Source: %s\n%s", name, strings.TrimLeft(s, "\n"))
		if !strings.HasSuffix(s, "\n") {
			out.WriteString("\n")
		}
	}
	return out.String(), nil
}

// funcMap: sprig's text functions as Helm offers them, plus Helm's own.
func funcMap(root *template.Template) template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env") // Helm removes these: a chart must not read the
	delete(f, "expandenv")
	includeDepth := 0
	f["include"] = func(name string, data interface{}) (string, error) {
		if includeDepth > 100 {
			return "", fmt.Errorf("include %q: recursion too deep", name)
		}
		includeDepth++
		defer func() { includeDepth-- }()
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, name, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	f["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := root.Clone()
		if err != nil {
			return "", err
		}
		if _, err := t.New("tpl").Parse(text); err != nil {
			return "", fmt.Errorf("tpl: %v", err)
		}
		var buf bytes.Buffer
		if err := t.ExecuteTemplate(&buf, "tpl", data); err != nil {
			return "", fmt.Errorf("tpl: %v", err)
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	f["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return nil, errors.New(msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return nil, errors.New(msg)
		}
		return v, nil
	}
	f["fail"] = func(msg string) (string, error) { return "", errors.New(msg) }
	f["toYaml"] = func(v interface{}) string {
		// Helm: sigs.k8s.io/yaml (JSON round trip, then yaml.v2), trailing
		// newline trimmed, "" on error.
		j, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		var generic interface{}
		if err := yaml2.Unmarshal(j, &generic); err != nil {
			return ""
		}
		b, err := yaml2.Marshal(generic)
		if err != nil {
			return ""
		}
		return strings.TrimSuffix(string(b), "\n")
	}
	f["fromYaml"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	f["toJson"] = func(v interface{}) string {
		b, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		return string(b)
	}
	f["fromJson"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	return f
}

func readYAMLMap(path string) (map[string]interface{}, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]interface{}{}
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return m, nil
}

// mergeValues: Helm's coalescing of a -f file over the values so far: maps
// merge recursively, anything else replaces, and null deletes the key.
func mergeValues(dst, src map[string]interface{}) map[string]interface{} {
	for k, v := range src {
		if v == nil {
			delete(dst, k)
			continue
		}
		sm, sok := v.(map[string]interface{})
		dm, dok := dst[k].(map[string]interface{})
		if sok && dok {
			dst[k] = mergeValues(dm, sm)
		} else {
			dst[k] = v
		}
	}
	return dst
}

var intRe = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// applySet: one --set/--set-string assignment (comma-separated pairs
// allowed, as in helm). Lists by index (`a[0]=x`) are refused, not guessed.
func applySet(values map[string]interface{}, expr string, typed bool) error {
	for _, pair := range splitUnescaped(expr, ',', true) {
		eq := strings.IndexByte(pair, '=')
		if eq <= 0 {
			return fmt.Errorf("%q: want key=value", pair)
		}
		key, raw := pair[:eq], pair[eq+1:]
		if strings.ContainsAny(key, "[]") {
			return fmt.Errorf("%q: list indices are not supported by this harness; use -f", key)
		}
		parts := splitUnescaped(key, '.', false)
		var v interface{} = strings.ReplaceAll(raw, `\,`, ",")
		if typed {
			v = typedValue(raw)
		}
		m := values
		for i, p := range parts {
			if p == "" {
				return fmt.Errorf("%q: empty key segment", key)
			}
			if i == len(parts)-1 {
				if v == nil {
					delete(m, p)
				} else {
					m[p] = v
				}
				break
			}
			next, ok := m[p].(map[string]interface{})
			if !ok {
				next = map[string]interface{}{}
				m[p] = next
			}
			m = next
		}
	}
	return nil
}

func typedValue(raw string) interface{} {
	switch raw {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	}
	if intRe.MatchString(raw) {
		if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
			return n
		}
	}
	if strings.HasPrefix(raw, "{") && strings.HasSuffix(raw, "}") {
		var list []interface{}
		inner := raw[1 : len(raw)-1]
		if inner != "" {
			for _, item := range strings.Split(inner, ",") {
				list = append(list, typedValue(item))
			}
		}
		if list == nil {
			list = []interface{}{}
		}
		return list
	}
	return strings.ReplaceAll(raw, `\,`, ",")
}

// splitUnescaped splits s on sep, honouring `\sep` as a literal (kept
// escaped when keepEscapes, for a later split) and not splitting inside {}.
func splitUnescaped(s string, sep byte, keepEscapes bool) []string {
	var parts []string
	var cur strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) && s[i+1] == sep {
			if keepEscapes {
				cur.WriteByte('\\')
			}
			cur.WriteByte(sep)
			i++
			continue
		}
		if c == '{' {
			depth++
		} else if c == '}' && depth > 0 {
			depth--
		}
		if c == sep && depth == 0 {
			parts = append(parts, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteByte(c)
	}
	return append(parts, cur.String())
}
