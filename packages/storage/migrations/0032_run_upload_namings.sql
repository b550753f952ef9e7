-- A run names the uploads it binds (storage/src/repositories/RunUploadNamings.ts): upload_namings
-- under the holder kind 'run', written with its task rows from now on. Runs already here name
-- theirs too: a task's attachments naming an upload of the run's creator, and a task result's
-- resource_link to svc://uploads/<id>.
INSERT INTO upload_namings (upload_id, holder_kind, holder_id)
SELECT u.id, 'run', r.id FROM runs r
  JOIN run_tasks t ON t.run_id = r.id
  CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(t.spec->'attachments') = 'array'
    THEN t.spec->'attachments' ELSE '[]'::jsonb END) a
  CROSS JOIN LATERAL (VALUES (CASE WHEN jsonb_typeof(a) = 'string' THEN lower(a #>> '{}') END),
    (lower(a->>'upload_public_id')), (lower(a->>'public_id'))) v(named)
  JOIN uploads u ON u.public_id = CASE
      WHEN v.named ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN v.named::uuid END
    AND u.creator_user_id = r.creator_id
UNION
SELECT u.id, 'run', t.run_id FROM run_tasks t
  CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(t.result->'content') = 'array'
    THEN t.result->'content' ELSE '[]'::jsonb END) b
  CROSS JOIN LATERAL (VALUES (CASE WHEN lower(b->>'uri') LIKE 'svc://uploads/%'
    THEN substr(lower(b->>'uri'), 15) END)) v(named)
  JOIN uploads u ON u.public_id = CASE
      WHEN v.named ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN v.named::uuid END
  WHERE b->>'type' = 'resource_link'
ON CONFLICT DO NOTHING;
