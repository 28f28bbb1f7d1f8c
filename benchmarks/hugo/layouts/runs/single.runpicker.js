{{- /* sitegen's own encoding of the record: Hugo lowercases front-matter keys, which would change the record's context labels */ -}}
window.speedMatrixRun({{ .Params.picker }});
