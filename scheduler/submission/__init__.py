"""From a sweep file to queued trials: expand the matrix, route, preflight, record, publish; or run it all embedded."""
