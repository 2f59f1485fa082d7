-- what an install of mq defines, one line per fact, without OIDs
WITH ext AS (SELECT oid, extconfig, extcondition FROM pg_extension WHERE extname = 'mq'),
nsp AS (SELECT n.oid, n.nspname FROM pg_namespace n
         WHERE n.nspname IN ('mq', 'mq_internal', 'mq_coord', 'mq_log')),
rel AS (SELECT c.* FROM pg_class c JOIN nsp ON c.relnamespace = nsp.oid
         WHERE nsp.nspname <> 'mq_log'
            OR EXISTS (SELECT 1 FROM pg_depend d, ext WHERE d.refobjid = ext.oid
                        AND d.classid = 'pg_class'::regclass AND d.objid = c.oid)
            OR c.relkind = 'i' AND EXISTS (SELECT 1 FROM pg_index i JOIN pg_depend d ON d.objid = i.indrelid, ext
                        WHERE i.indexrelid = c.oid AND d.refobjid = ext.oid))
SELECT line FROM (
  -- membership
  SELECT 'member ' || pg_describe_object(d.classid, d.objid, d.objsubid) AS line
    FROM pg_depend d, ext WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid
  UNION ALL
  SELECT 'config ' || c::regclass::text || ' ' || coalesce(ext.extcondition[i], '')
    FROM ext, unnest(ext.extconfig) WITH ORDINALITY AS u(c, i)
  UNION ALL
  SELECT 'schema ' || n.nspname || ' owner=' || n.nspowner::regrole || ' acl=' || coalesce(n.nspacl::text, '')
         || ' comment=' || coalesce(obj_description(n.oid, 'pg_namespace'), '')
    FROM pg_namespace n JOIN nsp USING (oid)
  UNION ALL
  -- routines: the whole definition, rights and comment
  SELECT 'routine ' || p.oid::regprocedure || ' acl=' || coalesce(p.proacl::text, '')
         || ' comment=' || coalesce(obj_description(p.oid, 'pg_proc'), '') || E'\n'
         || pg_get_functiondef(p.oid)
    FROM pg_proc p JOIN nsp ON p.pronamespace = nsp.oid
  UNION ALL
  SELECT 'relation ' || c.oid::regclass || ' kind=' || c.relkind::text || ' persistence=' || c.relpersistence::text
         || ' acl=' || coalesce(c.relacl::text, '') || ' options=' || coalesce(c.reloptions::text, '')
         || ' rls=' || c.relrowsecurity || ' replident=' || c.relreplident::text || ' owner=' || c.relowner::regrole
         || ' comment=' || coalesce(obj_description(c.oid, 'pg_class'), '')
         || CASE WHEN c.relkind IN ('v', 'm') THEN E'\n' || pg_get_viewdef(c.oid) ELSE '' END
         || CASE WHEN c.relkind = 'i' THEN E'\n' || pg_get_indexdef(c.oid) ELSE '' END
    FROM rel c
  UNION ALL
  -- columns in their order (ALTER TABLE ADD COLUMN appends)
  SELECT 'column ' || c.oid::regclass || ' #'
         || row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum) || ' ' || quote_ident(a.attname)
         || ' ' || format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
         || ' default=' || coalesce(pg_get_expr(ad.adbin, ad.adrelid), '')
         || ' identity=' || a.attidentity::text || ' generated=' || a.attgenerated::text
         || ' collation=' || coalesce(nullif(a.attcollation, 0)::regcollation::text, '')
         || ' acl=' || coalesce(a.attacl::text, '')
         || ' comment=' || coalesce(col_description(c.oid, a.attnum), '')
    FROM rel c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
    LEFT JOIN pg_attrdef ad ON ad.adrelid = c.oid AND ad.adnum = a.attnum
  UNION ALL
  SELECT 'constraint ' || c.oid::regclass || ' ' || quote_ident(k.conname) || ' ' || pg_get_constraintdef(k.oid)
    FROM rel c JOIN pg_constraint k ON k.conrelid = c.oid
  UNION ALL
  SELECT 'trigger ' || c.oid::regclass || ' ' || pg_get_triggerdef(t.oid) || ' enabled=' || t.tgenabled::text
    FROM rel c JOIN pg_trigger t ON t.tgrelid = c.oid AND NOT t.tgisinternal
  UNION ALL
  SELECT 'policy ' || c.oid::regclass || ' ' || pol.polname || ' ' || pol.polcmd::text
         || ' ' || coalesce(pg_get_expr(pol.polqual, pol.polrelid), '')
         || ' ' || coalesce(pg_get_expr(pol.polwithcheck, pol.polrelid), '')
    FROM rel c JOIN pg_policy pol ON pol.polrelid = c.oid
  UNION ALL
  SELECT 'sequence ' || c.oid::regclass || ' ' || format_type(s.seqtypid, NULL) || ' ' || s.seqstart
         || ' ' || s.seqincrement || ' ' || s.seqmax || ' ' || s.seqmin || ' ' || s.seqcache || ' ' || s.seqcycle
    FROM rel c JOIN pg_sequence s ON s.seqrelid = c.oid
  UNION ALL
  SELECT 'type ' || t.oid::regtype || ' ' || t.typtype::text || ' acl=' || coalesce(t.typacl::text, '')
         || ' comment=' || coalesce(obj_description(t.oid, 'pg_type'), '')
         || coalesce(' labels=' || (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)
                                     FROM pg_enum e WHERE e.enumtypid = t.oid), '')
         || coalesce(' base=' || nullif(t.typbasetype, 0)::regtype::text, '')
    FROM pg_type t JOIN nsp ON t.typnamespace = nsp.oid
   WHERE (t.typrelid = 0 OR (SELECT r.relkind FROM pg_class r WHERE r.oid = t.typrelid) = 'c')
     AND (nsp.nspname <> 'mq_log' OR EXISTS (SELECT 1 FROM pg_depend d, ext WHERE d.refobjid = ext.oid
                                              AND d.classid = 'pg_type'::regclass AND d.objid = t.oid))
  UNION ALL
  SELECT 'domain-constraint ' || k.contypid::regtype || ' ' || k.conname || ' ' || pg_get_constraintdef(k.oid)
    FROM pg_constraint k JOIN pg_type t ON t.oid = k.contypid JOIN nsp ON t.typnamespace = nsp.oid
  UNION ALL
  SELECT 'operator ' || o.oid::regoperator FROM pg_operator o JOIN nsp ON o.oprnamespace = nsp.oid
) facts
ORDER BY line COLLATE "C";
