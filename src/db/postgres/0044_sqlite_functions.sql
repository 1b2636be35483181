-- The few SQLite functions the box's statements use, as PostgreSQL functions of the same names and meaning, so
-- that a statement is written once for both stores (db/query.ts). Values come back as SQLite gives them where
-- the box reads them: a JSON array's elements as text, a path's value as text.

-- max(a, b) and min(a, b): SQLite's scalar forms (one argument is the aggregate, which PostgreSQL has).
CREATE FUNCTION max(a anycompatible, b anycompatible) RETURNS anycompatible LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT greatest(a, b)';
CREATE FUNCTION max(a anycompatible, b anycompatible, c anycompatible) RETURNS anycompatible LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT greatest(a, b, c)';
CREATE FUNCTION min(a anycompatible, b anycompatible) RETURNS anycompatible LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT least(a, b)';
CREATE FUNCTION min(a anycompatible, b anycompatible, c anycompatible) RETURNS anycompatible LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT least(a, b, c)';

-- json_each(text): a JSON array's elements (key: the index) or an object's members, each value as text.
CREATE FUNCTION json_each(doc text) RETURNS TABLE (key text, value text) LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN json_typeof(doc::json) = 'array' THEN (o - 1)::text END, e
  FROM json_array_elements_text(CASE WHEN json_typeof(doc::json) = 'array' THEN doc::json ELSE '[]'::json END) WITH ORDINALITY AS a(e, o)
  UNION ALL
  SELECT k, v FROM json_each_text(CASE WHEN json_typeof(doc::json) = 'object' THEN doc::json ELSE '{}'::json END) AS m(k, v)
$$;

-- json_extract(text, '$.a.b'), and the ->> operator on text with such a path: the value as text (NULL when absent).
CREATE FUNCTION json_extract(doc text, path text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
  'SELECT jsonb_path_query_first(doc::jsonb, path::jsonpath) #>> ''{}''';
CREATE OPERATOR ->> (LEFTARG = text, RIGHTARG = text, FUNCTION = json_extract);

-- instr(haystack, needle): the 1-based position, 0 when absent.
CREATE FUNCTION instr(haystack text, needle text) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT strpos(haystack, needle)';

-- COLLATE NOCASE: equal and ordered regardless of case (SQLite's folds ASCII only; this folds all letters).
CREATE COLLATION nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);

-- Sending, feedback, webhooks, templates:
-- strftime(format, seconds, 'unixepoch'): a Unix time in seconds as UTC text; %Y %m %d %H %M %S as SQLite's.
CREATE FUNCTION strftime(fmt text, t double precision, modifier text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN t IS NULL OR modifier IS DISTINCT FROM 'unixepoch' THEN NULL ELSE
    to_char(to_timestamp(t) AT TIME ZONE 'UTC',
      replace(replace(replace(replace(replace(replace(fmt, '%Y', 'YYYY'), '%m', 'MM'), '%d', 'DD'), '%H', 'HH24'), '%M', 'MI'), '%S', 'SS'))
  END
$$;

-- Emails, labels, drafts:
-- json_array_length(text): the number of elements of a JSON array stored as text (0 for any other value).
CREATE FUNCTION json_array_length(doc text) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
  'SELECT CASE WHEN json_typeof(doc::json) = ''array'' THEN json_array_length(doc::json) ELSE 0 END';
-- json_group_array(text): the values of a group as a JSON array of strings, in the order they come, '[]' for
-- none (SQLite's, written as compactly: no space after a comma).
CREATE FUNCTION json_group_array_step(acc text, v text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
  $$SELECT CASE WHEN acc IS NULL THEN '' ELSE acc || ',' END || coalesce(to_json(v)::text, 'null')$$;
CREATE FUNCTION json_group_array_final(acc text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
  $$SELECT '[' || coalesce(acc, '') || ']'$$;
CREATE AGGREGATE json_group_array(text) (SFUNC = json_group_array_step, STYPE = text, FINALFUNC = json_group_array_final);
-- json_set(text, '$.a.b', value): the document with the value at that path of object members (its JSON type
-- kept: a number stays a number); a parameter as the value is cast to its type, which PostgreSQL cannot guess.
CREATE FUNCTION json_set(doc text, path text, v anyelement) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
  $$SELECT jsonb_set(doc::jsonb, string_to_array(substr(path, 3), '.'), to_jsonb(v))::text$$;
