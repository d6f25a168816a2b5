-- sqlite-work.sql - the SQL workload of scripts/bench.sh's large-program
-- case (run by sqlite-run.c, size in cfg(n)): deterministic data made by
-- recursive CTEs, then inserts through indexes, joins, grouping, sorting,
-- window functions, string, date and JSON functions, updates and deletes,
-- so that much of the amalgamation's code is sampled.
CREATE TABLE item(id INTEGER PRIMARY KEY, grp INT, name TEXT, price REAL, tags TEXT);
CREATE TABLE ord(id INTEGER PRIMARY KEY, item INT, qty INT, day TEXT, note TEXT);
WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < (SELECT n FROM cfg))
INSERT INTO item SELECT x, (x * 7919) % 211,
    printf('it-%05d-%s', (x * 104729) % 50021, lower(hex(x * 31))),
    ((x * 2654435761) % 100003) / 100.0,
    json_array((x % 7), 'c' || (x % 13), (x % 3) = 0)
FROM s;
CREATE INDEX item_grp ON item(grp, price);
CREATE INDEX item_name ON item(name);
WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 3 * (SELECT n FROM cfg))
INSERT INTO ord SELECT x, (x * 48271) % (SELECT n FROM cfg) + 1, 1 + x % 9,
    date('2024-01-01', '+' || (x % 400) || ' days'),
    substr('abcdefghijklmnopqrstuvwxyz', 1 + x % 20, 1 + x % 6)
FROM s;
CREATE INDEX ord_item ON ord(item);
CREATE INDEX ord_day ON ord(day);
SELECT grp, count(*), round(sum(price), 2), min(name), max(name) FROM item GROUP BY grp ORDER BY 3 DESC LIMIT 25;
SELECT i.grp, strftime('%m', o.day) AS m, sum(o.qty * i.price) AS rev
  FROM ord o JOIN item i ON i.id = o.item GROUP BY i.grp, m ORDER BY rev DESC LIMIT 40;
SELECT id, name, sum(price) OVER (PARTITION BY grp ORDER BY price ROWS BETWEEN 3 PRECEDING AND CURRENT ROW),
       rank() OVER (PARTITION BY grp ORDER BY price DESC)
  FROM item WHERE id % 17 = 0 ORDER BY id LIMIT 200;
SELECT day, count(DISTINCT item), group_concat(note, '') FROM ord WHERE day BETWEEN '2024-03-01' AND '2024-06-30'
  GROUP BY day ORDER BY day;
SELECT json_extract(tags, '$[1]') AS t, count(*), avg(price) FROM item GROUP BY t ORDER BY t;
SELECT name FROM item WHERE name LIKE 'it-1%' AND instr(name, 'a') > 0 ORDER BY name DESC LIMIT 50;
SELECT upper(substr(name, 4, 5)) AS k, length(group_concat(id)) FROM item GROUP BY k HAVING count(*) > 1 ORDER BY k LIMIT 100;
WITH RECURSIVE fib(a, b, k) AS (SELECT 0, 1, 0 UNION ALL SELECT b, a + b, k + 1 FROM fib WHERE k < 70)
SELECT sum(a % 1000), count(*) FROM fib;
UPDATE item SET price = price * 1.07, name = replace(name, 'a', 'A') WHERE grp % 3 = 0;
DELETE FROM ord WHERE qty = 4 AND item IN (SELECT id FROM item WHERE grp % 5 = 1);
SELECT o.item, count(*), max(o.day), total(i.price) FROM ord o LEFT JOIN item i ON i.id = o.item
  WHERE o.note GLOB '*d*' GROUP BY o.item ORDER BY 2 DESC, 1 LIMIT 60;
SELECT grp, price FROM item WHERE price > (SELECT avg(price) FROM item) AND grp IN (1, 5, 9, 42)
  ORDER BY price LIMIT 80;
CREATE TABLE summary AS SELECT grp, count(*) AS n, sum(price) AS s FROM item GROUP BY grp;
SELECT a.grp, b.grp, a.s - b.s FROM summary a, summary b WHERE a.grp < b.grp AND abs(a.n - b.n) < 2
  ORDER BY 3 LIMIT 50;
SELECT count(*), sum(length(name)), sum(price) FROM item;
