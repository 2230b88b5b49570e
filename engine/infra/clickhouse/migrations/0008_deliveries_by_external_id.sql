-- 0008: a projection index of message_deliveries by (project, external_id): each part keeps its
-- rows' (project, external_id) sorted, with the row's position in the part (_part_offset), so a
-- query with `external_id = {…}` finds the granules holding that user's records by a binary search
-- instead of testing the bloom filter of every granule (idx_external_id, migration 0002).
--
-- Measured on 18.8M records over 30 days, one user with about 19 of them: the bloom filter passes 51
-- of 2301 granules and reading its 24 MB cost about 25 ms (62 ms p50 for the first page); through
-- the projection 19 granules are read and a lookup with no match takes 8 ms. It stores no column
-- but the key: 120 MB next to the table's 1 GB. Insert cost: see README, dashboard query figures.
--
-- Why a projection of _part_offset rather than a projection with the rows' columns: the page
-- needs every column of its records, and a copy of them sorted by user would double the table and
-- its inserts. Why not a text index (tokenizer = array): it found the same granules but its
-- lookup cost 13 ms and it took 156 MB.
--
-- MATERIALIZE PROJECTION is a mutation that runs in the background: meanwhile a query reads the
-- parts not yet rewritten through the bloom filter, so results stay exact.
ALTER TABLE message_deliveries ADD PROJECTION IF NOT EXISTS by_external_id
(
    SELECT _part_offset
    ORDER BY project, external_id
);
ALTER TABLE message_deliveries MATERIALIZE PROJECTION by_external_id;
