// Package page writes tfconv's HTML pages (inspect --report, quantize
// --report, verify --report) in one shell: a self-contained file with its
// CSS and scripts inline and no external resource, the page's data
// embedded as JSON in a <script type="application/json" id="page-data">
// element, and a shared script (tables sorted by a click on a column and
// filtered by text, number formatting, dtype colours) that each page's
// own script builds on.
//
// Every figure a page shows comes from the embedded data and is marked in
// the DOM with data-fig (what it is) and data-value (the exact number), so
// that a test can render the page in a browser and compare the figures
// with the command's --json.
package page
